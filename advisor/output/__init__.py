"""Formatters: findings in, text out. A formatter never decides anything."""

from __future__ import annotations

FORMATS = ("text", "json", "sarif", "github")
