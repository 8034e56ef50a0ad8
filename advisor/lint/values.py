"""Reading directive values and human sizes the way httpd and admins write them."""

from __future__ import annotations

import re

from advisor.errors import UsageError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_SIZE_FACTORS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str, what: str) -> int:
    """`4G`, `4096M`, `512MiB`, `2GB`, `1048576` -> bytes (binary units: sizes
    of RAM and of processes are powers of two in every tool admins use)."""
    match = _SIZE.match(str(text))
    if not match:
        raise UsageError(f"{what}: cannot read size {text!r}", hint="write e.g. 4G, 512M or 65536K")
    number, unit, _ = match.groups()
    value = float(number) * _SIZE_FACTORS[unit.lower()]
    if value <= 0:
        raise UsageError(f"{what}: size must be positive, got {text!r}")
    return int(value)


def format_bytes(size: float) -> str:
    """Shortest readable binary size: 512 MiB, 1.5 GiB, 64 KiB."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            value = size / factor
            return f"{value:.0f} {unit}" if value >= 10 or value == int(value) else f"{value:.1f} {unit}"
    return f"{int(size)} B"


def parse_int(text: str) -> int | None:
    """An integer argument as httpd's atoi-style setters accept it, or None."""
    try:
        return int(text.strip())
    except (ValueError, AttributeError):
        return None


def parse_flag(text: str) -> bool | None:
    """On/Off (case-insensitive, as httpd's FLAG directives), or None."""
    lowered = text.strip().lower()
    if lowered == "on":
        return True
    if lowered == "off":
        return False
    return None


def parse_seconds(text: str) -> float | None:
    """`5`, `300`, `500ms` (KeepAliveTimeout and Timeout accept ms since 2.3.x)."""
    lowered = text.strip().lower()
    try:
        if lowered.endswith("ms"):
            return float(lowered[:-2]) / 1000.0
        if lowered.endswith("s"):
            lowered = lowered[:-1]
        return float(lowered)
    except ValueError:
        return None


def format_seconds(value: float) -> str:
    return f"{value:g} s"


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


NO_SESSION_CACHE = ("none", "nonenotnull")


def names_a_cache(line) -> bool:
    """Whether an SSLSessionCache line configures a cache (not `none` or `nonenotnull`)."""
    return bool(line.args) and line.args[0].lower() not in NO_SESSION_CACHE


def session_cache_in_effect(lines: list) -> object | None:
    """Of a server's SSLSessionCache lines in reading order, the one whose
    cache httpd uses. mod_ssl's `none` and `nonenotnull` configure no cache
    of their own and leave an earlier line's in place (on the sandbox: shmcb,
    then none, and TLS 1.2 reconnects still resumed, bench/tls_resumption.py),
    so the last line naming a cache wins; with none such, the last line
    (`none`: no cache), or None when there is no line."""
    stores = [node for node in lines if names_a_cache(node)]
    return stores[-1] if stores else (lines[-1] if lines else None)
