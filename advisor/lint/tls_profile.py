"""The TLS expectations a lint run holds the config to: Mozilla's profiles.

Mozilla's Server Side TLS guidelines (and the SSL Configuration Generator
built on them) describe three configurations: `modern` (TLS 1.3 clients
only), `intermediate` (the general-purpose default: TLS 1.2 and 1.3) and
`old` (clients back to TLS 1.0 and Windows XP). An admin who must serve old
clients says so once (`lint --tls-profile old`, or `tls-profile = "old"` in
the settings file) instead of suppressing each finding; the TLS rules read
the profile from the host facts and name it in their findings, and
`explain CODE` says which profile a run applies and what it expects.
"""

from __future__ import annotations

from dataclasses import dataclass

TLS_PROFILE_NAMES = ("modern", "intermediate", "old")
DEFAULT_TLS_PROFILE = "intermediate"

SIX_MONTHS = 15768000
TWO_YEARS = 63072000


@dataclass(frozen=True)
class TlsProfile:
    name: str
    oldest_protocol: str
    """The oldest protocol version the profile accepts (SSLProtocol's spelling, lower case)."""
    hsts_min_age: int
    """The shortest Strict-Transport-Security max-age (seconds) the profile accepts."""
    triple_des: bool
    """Whether 3DES suites belong to the profile (only `old` keeps one, for IE 8 on XP)."""


PROFILES: dict[str, TlsProfile] = {
    # Mozilla's generator writes max-age=63072000 (two years) for every
    # profile; the web security guidelines accept six months at least.
    # Modern asks for what the generator writes, the others for the floor.
    "modern": TlsProfile("modern", "tlsv1.3", TWO_YEARS, False),
    "intermediate": TlsProfile("intermediate", "tlsv1.2", SIX_MONTHS, False),
    "old": TlsProfile("old", "tlsv1", SIX_MONTHS, True),
}


def profile(name: str | None) -> TlsProfile:
    """The profile of that name (the default for None)."""
    return PROFILES[name or DEFAULT_TLS_PROFILE]


def describe_age(seconds: int) -> str:
    """63072000 -> 'two years'; 604800 -> '7 days'."""
    days = seconds / 86400
    if seconds == TWO_YEARS:
        return "two years"
    if seconds == SIX_MONTHS:
        return "six months"
    if days >= 365:
        years = days / 365
        return f"{years:g} year{'' if years == 1 else 's'}"
    if days >= 1:
        return f"{days:g} day{'' if days == 1 else 's'}"
    return f"{seconds} seconds"
