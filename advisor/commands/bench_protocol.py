"""`bench --protocol`: which protocol the trials speak, checked before any load.

h1 is httperf over HTTP/1.1, every workload. h2 is h2load over HTTP/2 with
TLS, the browser workload only (a visitor's pages and their assets on one
connection): it needs h2load installed and a target that picks h2 when a
client offers it, as a browser does. A prefork sandbox offering h2 does not
(mod_http2 is inactive under prefork), and its trial would measure HTTP/1.1
under an HTTP/2 label, so it is refused before anything is loaded or changed.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from advisor.errors import UsageError

PROTOCOL_HELP = ("h1 (httperf, HTTP/1.1), h2 (h2load, HTTP/2 over TLS; the browser workload on a target "
                 "that offers h2: staging up --tls --h2 under event or worker) or mix (--h2-share of the "
                 "visitors on HTTP/2, the rest on HTTP/1.1, at once).")
H2_SHARE_HELP = "--protocol mix: the share of visitors on HTTP/2, strictly between 0 and 1 (e.g. 0.6)."


def check_protocol(protocol: str, workload_name: str, h2_share: float | None = None) -> float:
    """The options alone: a known protocol, h2 (or a mix) with the browser
    workload and h2load installed, a share for a mix; the share of HTTP/2 visitors."""
    from advisor.tuner.load import h2load
    from advisor.tuner.trial.browser_load import BROWSER_WORKLOAD, PROTOCOLS
    from advisor.tuner.trial.mixed_load import check_share

    if protocol not in PROTOCOLS:
        raise UsageError(f"--protocol {protocol!r} is not one of {', '.join(PROTOCOLS)}",
                         hint="h1: HTTP/1.1 with httperf; h2: HTTP/2 with h2load")
    share = check_share(h2_share, protocol)
    if protocol in ("h2", "mix"):
        if workload_name != BROWSER_WORKLOAD:
            raise UsageError(f"--protocol {protocol} measures the browser workload, not {workload_name!r}",
                             hint="add --workload browser (--num-calls pages a visit, --think seconds between them)")
        h2load.find_h2load()
    return share


def check_target_speaks_h2(base_url: str, protocol: str) -> None:
    """An h2 trial's target must be HTTPS and pick h2 in ALPN now; a mix's must
    be HTTPS (where h2 is not negotiated, its HTTP/2 share falls back to
    HTTP/1.1, as browsers do, and the trial says so)."""
    if protocol == "h1":
        return
    from advisor.tuner.staging.http2_setup import negotiated_protocol

    parts = urlsplit(base_url)
    if parts.scheme != "https":
        raise UsageError(f"--protocol {protocol} needs TLS, and {base_url} is plain HTTP: browsers speak HTTP/2 only over TLS",
                         hint="start the sandbox with --tls --h2, or give --tls or an https:// --url")
    if protocol == "mix":
        return
    port = parts.port or 443
    picked = negotiated_protocol(parts.hostname or "127.0.0.1", port)
    if picked != "h2":
        raise UsageError(f"{base_url} answers a client offering h2 and http/1.1 with {picked or 'no protocol'}: "
                         "an h2 trial would measure HTTP/1.1",
                         hint="mod_http2 is inactive under prefork (AH10034): use --mpm event or worker with "
                              "staging up --tls --h2, or load mod_http2 and set Protocols h2 http/1.1")
