"""What an OpenSSL cipher string admits, read without OpenSSL.

The rule must judge the string written in the config, not what the lint
host's OpenSSL happens to support (OpenSSL 3 has no RC4 or EXPORT ciphers
at all, so expanding the string locally would hide them). So we replay
OpenSSL's cipher-list language (`man 1 ciphers`) over a small universe:
one representative per family that matters, plus every cipher the string
names, described by the parts of its name. Semantics follow OpenSSL 1.1
and later (3DES in MEDIUM, not HIGH; RC4, 3DES and anonymous suites out of
DEFAULT), the library every supported httpd 2.4 links against.

Each word is `[!|-|+]ALIAS[+ALIAS...]`: no prefix adds the matching ciphers
(at the end, unless already listed), `-` removes them, `!` removes them for
good, `+` only moves them to the end. `A+B` matches what both match.
`@STRENGTH` sorts what is listed so far by key length. The universe keeps
OpenSSL's order, so the list's order is OpenSSL's too as far as the rules
need it (S511 reads what is admitted, E409 also which suite comes first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WEAK_FAMILIES = ("RC4", "DES", "3DES", "EXPORT", "NULL", "aNULL", "MD5")
"""What the rule calls weak, in the order findings name them."""


@dataclass(frozen=True)
class Cipher:
    name: str
    kx: str        # RSA, DHE, ECDHE, PSK, SRP
    auth: str      # RSA, ECDSA, DSS, NULL, PSK
    enc: str       # AESGCM, AES, CHACHA20, CAMELLIA, 3DES, DES, RC4, NULL, SEED, IDEA, ARIA
    mac: str       # AEAD, SHA1, SHA256, SHA384, MD5
    export: bool = False

    @property
    def families(self) -> set[str]:
        hits = {"RC4": self.enc == "RC4", "DES": self.enc == "DES", "3DES": self.enc == "3DES",
                "EXPORT": self.export, "NULL": self.enc == "NULL", "aNULL": self.auth == "NULL",
                "MD5": self.mac == "MD5"}
        return {family for family, hit in hits.items() if hit}

    @property
    def strength(self) -> str:
        if self.export:
            return "EXPORT"
        if self.enc == "NULL":
            return "NONE"
        if self.enc == "DES":
            return "LOW"
        if self.enc in ("3DES", "RC4", "SEED", "IDEA"):
            return "MEDIUM"
        return "HIGH"

    @property
    def bits(self) -> int:
        """Symmetric strength in bits, as `@STRENGTH` sorts by it."""
        if self.enc == "NULL":
            return 0
        if self.export:
            return 40
        if self.enc == "DES":
            return 56
        if self.enc == "3DES":
            return 112
        if self.enc == "CHACHA20" or re.search(r"(AES|CAMELLIA|ARIA)-?256", self.name):
            return 256
        return 128

    @property
    def http2_prohibited(self) -> str | None:
        """Why RFC 7540's Appendix A (kept by RFC 9113) lists this TLS 1.2
        suite, or None when HTTP/2 may use it. The appendix names every suite
        without an ephemeral (EC)DHE key exchange and every suite whose cipher
        is not an AEAD one, anonymous DH among them; (EC)DHE with GCM, CCM or
        ChaCha20-Poly1305 is what remains (PSK ones with (EC)DHE too)."""
        if self.auth == "NULL":
            return "anonymous, no server authentication"
        if self.kx not in ("DHE", "ECDHE"):
            return f"{self.kx} key exchange, no forward secrecy"
        if self.mac != "AEAD":
            return "stream cipher" if self.enc == "RC4" else (
                "no encryption" if self.enc == "NULL" else "CBC, not an AEAD cipher")
        return None


_OTHER_CIPHERS = ("CHACHA20", "CAMELLIA", "SEED", "IDEA", "ARIA")


def describe(name: str) -> Cipher:
    """A cipher's parts from its OpenSSL name (ECDHE-RSA-AES128-GCM-SHA256,
    ADH-DES-CBC3-SHA, EXP-RC4-MD5, NULL-SHA, PSK-AES128-CBC-SHA...)."""
    upper = name.upper()
    parts = upper.split("-")
    export = parts[0] in ("EXP", "EXP1024") or "EXPORT" in upper
    if export:
        parts = parts[1:]
    head = parts[0] if parts else ""
    if head in ("ADH", "AECDH"):
        kx, auth = ("DHE" if head == "ADH" else "ECDHE"), "NULL"
    elif head in ("ECDHE", "EECDH"):
        kx = "ECDHE"
        auth = "ECDSA" if "ECDSA" in parts[1:2] else ("PSK" if "PSK" in parts[1:2] else "RSA")
    elif head in ("DHE", "EDH"):
        kx = "DHE"
        auth = "DSS" if "DSS" in parts[1:2] else ("PSK" if "PSK" in parts[1:2] else "RSA")
    elif head in ("PSK", "RSA") and "PSK" in parts[:2]:
        kx, auth = "PSK", "PSK"
    elif head.startswith("SRP"):
        kx, auth = "SRP", "RSA" if "RSA" in parts[1:2] else "NULL"
    else:
        kx, auth = "RSA", "RSA"
    if "NULL" in parts[1:] or head == "NULL":
        enc = "NULL"
    elif "RC4" in upper:
        enc = "RC4"
    elif "DES-CBC3" in upper or "3DES" in upper or "DES-EDE" in upper:
        enc = "3DES"
    elif "DES" in parts:
        enc = "DES"
    elif "AES" in upper:
        enc = "AESGCM" if "GCM" in upper else "AES"
    else:
        enc = next((family for family in _OTHER_CIPHERS if family in upper), "AES")
    # GCM, CCM and ChaCha20-Poly1305 authenticate with the cipher itself:
    # OpenSSL lists ECDHE-RSA-AES128-GCM-SHA256 as Mac=AEAD (the SHA256 is
    # its handshake hash), so its SHA256 alias does not match it.
    if parts and parts[-1] == "MD5":
        mac = "MD5"
    elif "GCM" in upper or "CCM" in upper or enc == "CHACHA20":
        mac = "AEAD"
    elif parts and parts[-1] == "SHA384":
        mac = "SHA384"
    elif parts and parts[-1] == "SHA256":
        mac = "SHA256"
    else:
        mac = "SHA1"
    return Cipher(upper, kx, auth, enc, mac, export)


# One of each family the rule cares about, and the strong suites every
# modern list is made of, in OpenSSL's order (ephemeral AEAD suites first),
# with CBC suites for both certificate kinds (E409 reads the order).
_UNIVERSE = tuple(describe(name) for name in (
    "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-RSA-CHACHA20-POLY1305", "DHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-SHA256",
    "ECDHE-RSA-AES128-SHA", "ECDHE-ECDSA-AES128-SHA", "DHE-RSA-AES256-SHA", "AES128-GCM-SHA256",
    "AES256-SHA", "CAMELLIA128-SHA", "ECDHE-ECDSA-CAMELLIA128-SHA256", "PSK-AES128-CBC-SHA",
    "SEED-SHA",
    "DES-CBC3-SHA", "ECDHE-RSA-DES-CBC3-SHA", "EDH-RSA-DES-CBC3-SHA",
    "RC4-SHA", "RC4-MD5", "ECDHE-RSA-RC4-SHA", "DES-CBC-SHA", "EDH-RSA-DES-CBC-SHA",
    "EXP-RC4-MD5", "EXP-DES-CBC-SHA", "EXP-EDH-RSA-DES-CBC-SHA",
    "NULL-SHA", "NULL-MD5", "ECDHE-RSA-NULL-SHA",
    "ADH-AES128-SHA", "ADH-AES256-GCM-SHA384", "AECDH-AES128-SHA", "ADH-RC4-MD5",
    "ADH-DES-CBC3-SHA",
))


def _alias(word: str):
    """The test for one alias, or None when the word is no alias we know."""
    w = word.upper()
    tls12 = lambda c: c.mac in ("SHA256", "SHA384", "AEAD")  # noqa: E731
    table = {
        "ALL": lambda c: c.enc != "NULL",
        "COMPLEMENTOFALL": lambda c: c.enc == "NULL",
        "DEFAULT": lambda c: (c.enc != "NULL" and c.auth != "NULL" and c.strength == "HIGH"),
        "COMPLEMENTOFDEFAULT": lambda c: c.enc != "NULL" and (c.auth == "NULL" or c.strength != "HIGH"),
        "HIGH": lambda c: c.strength == "HIGH" and c.enc != "NULL",
        "MEDIUM": lambda c: c.strength == "MEDIUM",
        "LOW": lambda c: c.strength == "LOW",
        "EXP": lambda c: c.export, "EXPORT": lambda c: c.export,
        "EXPORT40": lambda c: c.export, "EXPORT56": lambda c: c.export,
        "ENULL": lambda c: c.enc == "NULL", "NULL": lambda c: c.enc == "NULL",
        "ANULL": lambda c: c.auth == "NULL",
        "RC4": lambda c: c.enc == "RC4", "DES": lambda c: c.enc == "DES",
        "3DES": lambda c: c.enc == "3DES",
        "AES": lambda c: c.enc in ("AES", "AESGCM"), "AES128": lambda c: c.enc in ("AES", "AESGCM"),
        "AES256": lambda c: c.enc in ("AES", "AESGCM"), "AESGCM": lambda c: c.enc == "AESGCM",
        "CHACHA20": lambda c: c.enc == "CHACHA20", "CAMELLIA": lambda c: c.enc == "CAMELLIA",
        "SEED": lambda c: c.enc == "SEED", "IDEA": lambda c: c.enc == "IDEA",
        "ARIA": lambda c: c.enc == "ARIA",
        "MD5": lambda c: c.mac == "MD5", "SHA1": lambda c: c.mac == "SHA1",
        "SHA": lambda c: c.mac == "SHA1", "SHA256": lambda c: c.mac == "SHA256",
        "SHA384": lambda c: c.mac == "SHA384", "AEAD": lambda c: c.mac == "AEAD",
        "KRSA": lambda c: c.kx == "RSA", "ARSA": lambda c: c.auth == "RSA",
        "RSA": lambda c: c.kx == "RSA" or c.auth == "RSA",
        "KEDH": lambda c: c.kx == "DHE", "KDHE": lambda c: c.kx == "DHE",
        "EDH": lambda c: c.kx == "DHE" and c.auth != "NULL",
        "DHE": lambda c: c.kx == "DHE" and c.auth != "NULL",
        "ADH": lambda c: c.kx == "DHE" and c.auth == "NULL",
        "KEECDH": lambda c: c.kx == "ECDHE", "KECDHE": lambda c: c.kx == "ECDHE",
        "EECDH": lambda c: c.kx == "ECDHE" and c.auth != "NULL",
        "ECDHE": lambda c: c.kx == "ECDHE" and c.auth != "NULL",
        "ECDH": lambda c: c.kx == "ECDHE",
        "AECDH": lambda c: c.kx == "ECDHE" and c.auth == "NULL",
        "AECDSA": lambda c: c.auth == "ECDSA", "ECDSA": lambda c: c.auth == "ECDSA",
        "ADSS": lambda c: c.auth == "DSS", "DSS": lambda c: c.auth == "DSS",
        "PSK": lambda c: c.kx == "PSK", "KPSK": lambda c: c.kx == "PSK", "APSK": lambda c: c.auth == "PSK",
        "SRP": lambda c: c.kx == "SRP", "KSRP": lambda c: c.kx == "SRP",
        "TLSV1.2": tls12, "TLSV1": lambda c: not tls12(c), "SSLV3": lambda c: not tls12(c),
    }
    return table.get(w)


_CIPHER_NAME = re.compile(r"^[A-Z0-9]+(-[A-Z0-9]+)+$")


def admitted(spec: str) -> list[Cipher]:
    """The ciphers the string leaves in the list, in list order."""
    words = [w for w in re.split(r"[:, ]+", spec.strip().strip('"')) if w]
    universe = list(_UNIVERSE)
    for word in words:
        for part in word.lstrip("!-+").split("+"):
            if _alias(part) is None and _CIPHER_NAME.match(part.upper()):
                if all(c.name != part.upper() for c in universe):
                    universe.append(describe(part))
    chosen: list[Cipher] = []
    killed: set[str] = set()
    for word in words:
        if word.startswith("@"):
            # @STRENGTH re-sorts what is listed so far, strongest first (a
            # stable sort); @SECLEVEL=n is library policy, not membership.
            if word.upper() == "@STRENGTH":
                chosen.sort(key=lambda c: -c.bits)
            continue
        op = word[0] if word[0] in "!-+" else ""
        body = word[1:] if op else word
        tests = []
        for part in body.split("+"):
            if not part:
                continue
            test = _alias(part)
            if test is None:
                named = part.upper()
                test = (lambda c, n=named: c.name == n) if _CIPHER_NAME.match(named) else (lambda c: False)
            tests.append(test)
        matching = [c for c in universe if tests and all(t(c) for t in tests)]
        if op == "!":
            killed.update(c.name for c in matching)
            chosen = [c for c in chosen if c.name not in killed]
        elif op == "-":
            names = {c.name for c in matching}
            chosen = [c for c in chosen if c.name not in names]
        elif op == "+":
            names = {c.name for c in matching}
            chosen = [c for c in chosen if c.name not in names] + [c for c in chosen if c.name in names]
        else:
            present = {c.name for c in chosen}
            chosen += [c for c in matching if c.name not in present and c.name not in killed]
    return chosen


def weak_families(spec: str) -> list[str]:
    """The weak families (WEAK_FAMILIES order) the string admits."""
    found: set[str] = set()
    for cipher in admitted(spec):
        found |= cipher.families
    return [family for family in WEAK_FAMILIES if family in found]
