"""S532 passes over a Header line that names none of its dead headers before
its per-argument-list memo, with three substring tests spelled out for speed
(rules/s532_dead_security_headers.py). Each header it knows must pass that
screen, or a new entry in its table would never be reported."""

from __future__ import annotations

import inspect

from advisor.rules import s532_dead_security_headers as s532


def test_every_dead_header_passes_the_screen():
    screen = ("x-xss-protection", "expect-ct", "public-key-pins")
    assert all(f'"{name}" in text' in inspect.getsource(s532.check) for name in screen)
    for name in s532._DEAD:
        assert any(part in f"set {name} 0" for part in screen), name
