"""HTTPS for the sandbox: a key and self-signed certificate, and mod_ssl's lines.

The lines follow what Debian's `ssl.conf` and `default-ssl.conf` set: the
shmcb session cache (512,000 bytes, 300 s), `SSLCipherSuite HIGH:!aNULL`,
session tickets off (so that a resumed session is one the server's cache
hands back, and mod_status counts it), and `SSLEngine on` in a virtual host
for the sandbox's address. The protocols are TLS 1.2 and 1.3 only, what
browsers still speak. The key is made at `staging up` with the `openssl`
command: ECDSA P-256 by default, RSA-2048 for the many sites still on RSA
(an RSA-2048 signature costs about ten times an ECDSA P-256 one).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from advisor.errors import AdvisorError, UsageError

KEY_TYPES = {
    "ecdsa-p256": ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
    "rsa2048": ["-newkey", "rsa:2048"],
}
DEFAULT_KEY_TYPE = "ecdsa-p256"
CERT_FILE = "server.crt"
KEY_FILE = "server.key"
SESSION_CACHE_BYTES = 512000  # Debian's ssl.conf
SESSION_CACHE_TIMEOUT_S = 300


def check_key_type(key_type: str | None) -> str:
    """The key type asked for, checked; None is the default."""
    chosen = (key_type or DEFAULT_KEY_TYPE).lower()
    if chosen not in KEY_TYPES:
        raise UsageError(f"unknown TLS key type {key_type!r}", hint="use --tls-key " + " or ".join(KEY_TYPES))
    return chosen


def check_modules(modules_dir: str) -> None:
    for name in ("mod_ssl.so", "mod_socache_shmcb.so"):
        if not os.path.isfile(os.path.join(modules_dir, name)):
            raise AdvisorError(f"httpd has no {name} in {modules_dir}: the sandbox cannot serve HTTPS",
                               hint="install the package that ships mod_ssl (apache2-bin on Debian)")


def make_key_and_cert(dest: Path, key_type: str, host: str, timeout: float = 60.0) -> tuple[Path, Path]:
    """A fresh key and a self-signed certificate for `host`, written into `dest`.

    Made in a temporary directory first and moved in only when both exist:
    a failure leaves `dest` as it was. Raises a one-line AdvisorError with
    openssl's own reason.
    """
    binary = shutil.which("openssl")
    if binary is None:
        raise AdvisorError("cannot make the sandbox's TLS key and certificate: openssl not found",
                           hint="install openssl (apt-get install openssl)")
    san = f"IP:{host}" if _is_ip(host) else f"DNS:{host}"
    with tempfile.TemporaryDirectory(prefix="advisor-tls-") as tmp:
        key, cert = Path(tmp) / KEY_FILE, Path(tmp) / CERT_FILE
        command = [binary, "req", "-x509", *KEY_TYPES[key_type], "-nodes", "-keyout", str(key), "-out", str(cert),
                   "-days", "30", "-subj", f"/CN={host}", "-addext", f"subjectAltName={san}"]
        try:
            made = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AdvisorError(f"cannot make the sandbox's TLS key and certificate: {exc}",
                               hint="check that `openssl req` runs on this host") from None
        if made.returncode != 0 or not key.is_file() or not cert.is_file():
            raise AdvisorError(f"cannot make the sandbox's TLS key and certificate: openssl said "
                               f"{_first_line(made.stderr or made.stdout)}",
                               hint="check that `openssl req` runs on this host (OPENSSL_CONF, the openssl package)")
        dest.mkdir(parents=True, exist_ok=True)
        key.chmod(0o600)
        shutil.move(str(key), dest / KEY_FILE)
        shutil.move(str(cert), dest / CERT_FILE)
    return dest / CERT_FILE, dest / KEY_FILE


def config_lines(modules_dir: str, run_dir: Path, host: str, port: int, cert: Path, key: Path) -> str:
    """mod_ssl's part of the sandbox's httpd.conf (Debian's ssl.conf and default-ssl.conf)."""
    return "\n".join([
        "# HTTPS as Debian's ssl.conf and default-ssl.conf set it up (staging up --tls).",
        f'LoadModule socache_shmcb_module "{modules_dir}/mod_socache_shmcb.so"',
        f'LoadModule ssl_module "{modules_dir}/mod_ssl.so"',
        "SSLRandomSeed startup builtin",
        "SSLRandomSeed connect builtin",
        session_cache_line(run_dir, cache=True),
        f"SSLSessionCacheTimeout {SESSION_CACHE_TIMEOUT_S}",
        "SSLCipherSuite HIGH:!aNULL",
        "SSLProtocol -all +TLSv1.2 +TLSv1.3",
        "SSLSessionTickets off",
        f"<VirtualHost {host}:{port}>",
        "    SSLEngine on",
        f'    SSLCertificateFile "{cert}"',
        f'    SSLCertificateKeyFile "{key}"',
        "</VirtualHost>",
    ])


def session_cache_line(run_dir: Path, cache: bool) -> str:
    return f'SSLSessionCache "shmcb:{run_dir}/ssl_scache({SESSION_CACHE_BYTES})"' if cache else "SSLSessionCache none"


_CACHE_LINE = re.compile(r"^SSLSessionCache .*$", re.M)
_TICKETS_LINE = re.compile(r"^SSLSessionTickets (?:on|off)$", re.M)


def set_session_resumption(config_path: Path, run_dir: Path, *, cache: bool, tickets: bool) -> None:
    """The sandbox's own SSLSessionCache and SSLSessionTickets lines in its
    httpd.conf, rewritten in place; a full restart makes them take effect.

    In place, because the managed include cannot take the cache away:
    mod_ssl reads `SSLSessionCache none` as "configure nothing", so a `none`
    read after the sandbox's shmcb line leaves shmcb in force (the first
    run of bench/tls_resumption.py measured the cache where it meant its
    absence). Written whole to a temporary file and moved over the old one.
    """
    text = config_path.read_text()
    if not _CACHE_LINE.search(text) or not _TICKETS_LINE.search(text):
        raise AdvisorError("no SSLSessionCache or SSLSessionTickets line of the sandbox's own: it serves plain HTTP",
                           file=str(config_path), hint="start the sandbox with `staging up --tls`")
    text = _CACHE_LINE.sub(lambda _: session_cache_line(run_dir, cache), text, count=1)
    text = _TICKETS_LINE.sub(f"SSLSessionTickets {'on' if tickets else 'off'}", text, count=1)
    fresh = config_path.with_name(config_path.name + ".new")
    fresh.write_text(text)
    fresh.replace(config_path)


def session_resumption(config_path: Path) -> tuple[bool, bool]:
    """(cache, tickets) as the sandbox's httpd.conf sets them."""
    text = config_path.read_text()
    cache, tickets = _CACHE_LINE.search(text), _TICKETS_LINE.search(text)
    return (cache is not None and cache.group(0) != "SSLSessionCache none",
            tickets is not None and tickets.group(0).endswith(" on"))


def _is_ip(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no output"
