"""HTTP/2 for the sandbox (`staging up --tls --h2`): mod_http2's lines, and
whether h2 is what a browser would get.

The lines follow Debian's `http2.load` and `http2.conf` (what `a2enmod
http2` turns on): mod_http2 loaded and `Protocols` at server scope, which
the sandbox's TLS virtual host inherits. Debian's file offers `h2 h2c
http/1.1`; the sandbox offers `h2 http/1.1`, since h2c (HTTP/2 over plain
TCP) is never used on a TLS connection and no browser speaks it.

Offering h2 is not serving it. mod_http2 runs on the threaded MPMs only:
under prefork httpd starts, logs AH10034 ("the HTTP/2 protocol will be
inactive") and answers every client with HTTP/1.1. What a browser gets is
read from the server, by one TLS handshake that offers h2 and http/1.1 in
ALPN, as a browser's does.
"""

from __future__ import annotations

import os
import socket
import ssl

from advisor.errors import UsageError

MODULE_FILE = "mod_http2.so"
OFFERED = ["h2", "http/1.1"]
HTTP1_ONLY = ["http/1.1"]
# The MPMs mod_http2 will not run under, with httpd's message number.
UNSUPPORTED_MPMS = {"prefork": "AH10034"}


def check_module(modules_dir: str) -> None:
    """mod_http2 is installed where the sandbox loads its modules from."""
    if not os.path.isfile(os.path.join(modules_dir, MODULE_FILE)):
        raise UsageError(f"--h2: httpd has no {MODULE_FILE} in {modules_dir}, so the sandbox cannot offer HTTP/2",
                         hint="install the package that ships mod_http2 (apache2-bin on Debian), or leave out --h2")


def config_lines(modules_dir: str) -> str:
    """mod_http2's part of the sandbox's httpd.conf (Debian's http2.load and http2.conf, without h2c)."""
    return "\n".join([
        "# HTTP/2 as Debian's http2.load and http2.conf set it up (staging up --h2), h2c left out:",
        "# the sandbox serves TLS only, and h2c is HTTP/2 over plain TCP.",
        f'LoadModule http2_module "{modules_dir}/{MODULE_FILE}"',
        "Protocols " + " ".join(OFFERED),
    ])


def inactive_reason(mpm: str | None) -> str | None:
    """Why mod_http2 will not negotiate h2 under `mpm` (None where it does)."""
    code = UNSUPPORTED_MPMS.get(mpm or "")
    if code is None:
        return None
    return (f"mod_http2 does not run under the {mpm} MPM (httpd logs {code}): clients get HTTP/1.1; "
            f"use --mpm event or worker to serve HTTP/2")


def negotiated_protocol(host: str, port: int, timeout: float = 2.0) -> str | None:
    """The protocol the server picks when a client offers h2 and http/1.1 in
    ALPN, as a browser does: "h2", "http/1.1", or None when it picks none
    (or cannot be reached over TLS)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the sandbox's self-signed certificate
    context.set_alpn_protocols(OFFERED)
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            with context.wrap_socket(raw, server_hostname=host) as conn:
                return conn.selected_alpn_protocol()
    except (OSError, ssl.SSLError):
        return None


def h2_status(offered: bool, mpm: str | None, host: str, port: int, running: bool) -> dict[str, object]:
    """`staging status`'s HTTP/2 part: offered, and whether a browser gets it.

    On a running server the answer is the server's own (`negotiated_protocol`),
    so a managed include that overrides `Protocols` shows too; the MPM's
    reason, where it has one, says why."""
    if not offered:
        return {"offered": False, "active": False, "negotiated": None, "inactive_reason": None}
    reason = inactive_reason(mpm)
    negotiated = negotiated_protocol(host, port) if running else None
    active = negotiated == "h2"
    if not running and reason is None:
        reason = "the server is not running"
    elif not active and reason is None:
        reason = (f"the server picks {negotiated or 'no protocol'} when a client offers h2 and http/1.1 "
                  f"(look for a Protocols line in the managed include)")
    return {"offered": True, "active": active, "negotiated": negotiated, "inactive_reason": reason}
