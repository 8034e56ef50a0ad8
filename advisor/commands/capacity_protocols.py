"""`capacity --h2-share` and the log's %H: the protocol mix's inputs (issue 57).

The flags are checked before anything is read; the config is then read for
what decides whether HTTP/2 is served and what it holds (mod_http2, the
Protocols lines, TLS, KeepAlive, H2MinWorkers/H2MaxWorkers), and the share
is taken from the flag, else from the log, else 0. The arithmetic is
advisor.capacity.protocol_mix's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.errors import ConfigError, UsageError

H2_SHARE_HELP = ("Share of visitors whose browser speaks HTTP/2 (0 to 1): one connection each instead of up to six; "
                 "default: the log's %H (with --log), else 0.")
REQUESTS_PER_PAGE_HELP = ("Requests a page view makes (the page and its assets), for the protocol mix; "
                          "default 5.2 (Almeida et al. 1996, workload A).")


@dataclass(frozen=True)
class ProtocolFlags:
    h2_share: float | None
    """None: not given."""
    requests_per_page: float


def parse_protocol_flags(h2_share: str | None, requests_per_page: str | None) -> ProtocolFlags:
    """The two flags checked: one line and exit 2 on a bad one."""
    from advisor.capacity.protocol_mix import REQUESTS_PER_PAGE, parse_share

    share = None
    if h2_share is not None:
        try:
            share = parse_share(h2_share)
        except ValueError as error:
            raise UsageError(str(error)) from None
    per_page = REQUESTS_PER_PAGE
    if requests_per_page is not None:
        try:
            per_page = float(requests_per_page)
        except ValueError:
            raise UsageError(f"--requests-per-page {requests_per_page!r}: not a number",
                             hint="the requests of one page view, e.g. 5.2") from None
        if not (math.isfinite(per_page) and per_page >= 1):
            raise UsageError(f"--requests-per-page {requests_per_page}: a page is at least one request")
    return ProtocolFlags(share, per_page)


def _offers_h2(cfg) -> bool:
    """Some Protocols line in effect lists h2 (or h2c)."""
    for node in cfg.effective.walk():
        if getattr(node, "name", "").lower() == "protocols":
            if any(arg.lower() in ("h2", "h2c") for arg in node.args):
                return True
    return False


def _serves_tls(cfg) -> bool:
    for node in cfg.effective.walk():
        if getattr(node, "name", "").lower() == "sslengine" and node.args and node.args[0].lower() == "on":
            return True
    return False


def _h2_workers(cfg, name: str) -> tuple[int | None, str]:
    """H2MinWorkers or H2MaxWorkers as written (mod_http2 refuses a value below 1)."""
    directive = cfg.server_value(name)
    if directive is None:
        return None, ""
    text = directive.arg(0)
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{name} takes a whole number of threads >= 1, not {text!r}", directive.file,
                          directive.line, "mod_http2 refuses it: write e.g. 25")
    return value, f"{name} {value} ({directive.file}:{directive.line})"


def _share_and_source(flags: ProtocolFlags, log_input, notes: list[str]) -> tuple[float, str]:
    """The share modelled: --h2-share, else the log's, else 0 (and why, in the notes)."""
    counted = getattr(getattr(log_input, "demand", None), "protocols", None)
    if flags.h2_share is not None:
        if counted is not None:
            notes.append(f"--h2-share {flags.h2_share:g} replaces the log's {counted.h2_share * 100:.1f} % of requests "
                         f"over HTTP/2")
        return flags.h2_share, "--h2-share"
    if counted is not None:
        return counted.h2_share, f"the log's {counted.source}, {counted.h2_requests:,} of {counted.requests:,} requests"
    if log_input is not None:
        notes.append("the log's format has no %H (nor %r): the protocol mix is unknown; every visitor is assumed on "
                     "HTTP/1.1 (log %H, or give --h2-share)")
        return 0.0, "assumed: the log does not tell the protocol"
    return 0.0, "the default, --h2-share 0"


def mix_settings(cfg, mpm: str, settings, flags: ProtocolFlags, log_input, notes: list[str],
                 thread_bytes: int | None = None):
    """The protocol mix's MixSettings for this config and pool (`settings`: MpmSettings)."""
    from advisor.capacity.protocol_mix import MixSettings
    from advisor.commands.logdemand_input import keepalive_values

    share, source = _share_and_source(flags, log_input, notes)
    counted = getattr(getattr(log_input, "demand", None), "protocols", None)
    if counted is not None and counted.h2_requests and mpm == "prefork" and cfg.apache_version >= (2, 4, 27):
        notes.append(f"the log holds {counted.h2_requests:,} HTTP/2 requests, but under prefork mod_http2 "
                     f"negotiates none: the log comes from another server or MPM than this config")
    keepalive, timeout = keepalive_values(cfg)
    low, low_where = _h2_workers(cfg, "H2MinWorkers")
    high, high_where = _h2_workers(cfg, "H2MaxWorkers")
    threads = settings.threads_per_child if mpm != "prefork" else 1
    demand = getattr(log_input, "demand", None)
    return MixSettings(
        mpm=mpm, asked_share=share, share_source=source, version=cfg.apache_version,
        requests_per_page=flags.requests_per_page, keepalive=keepalive, keepalive_timeout=timeout,
        tls=_serves_tls(cfg), h2_loaded=cfg.has_module("http2_module") or cfg.has_module("mod_http2.c"),
        h2_offered=_offers_h2(cfg), threads_per_child=threads,
        processes=max(1, math.ceil(settings.max_request_workers / threads)),
        h2_min_workers=low, h2_max_workers=high, h2_workers_where=high_where or low_where,
        log_hold=demand.hold.mean if demand is not None and demand.hold is not None else None,
        log_rate=demand.busiest_minute_rate if demand is not None else None, thread_bytes=thread_bytes)
