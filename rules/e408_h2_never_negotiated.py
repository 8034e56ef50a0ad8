"""E408: `Protocols` offers h2 where httpd never negotiates it."""

from __future__ import annotations

from advisor.config.model import Directive
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._http2 import ProtocolOffer, http2_loaded, offer_name, protocol_offers

# Modules that tie the server to prefork: what the advice to leave prefork
# has to reckon with. mpm-itk refuses threaded MPMs ("mpm-itk cannot use
# threaded MPMs; please use prefork"), mod_ruid2 switches the uid of the
# whole process, mod_php is not thread-safe in Debian's build.
_PREFORK_BOUND = {
    "mpm_itk_module": "mpm-itk", "ruid2_module": "mod_ruid2", "php_module": "mod_php",
    "php5_module": "mod_php", "php7_module": "mod_php", "php8_module": "mod_php",
}

DOC = Doc(
    summary="Protocols offers h2 where httpd never negotiates it (prefork MPM, or mod_http2 not loaded)",
    what=(
        "For each `Protocols` line that offers `h2` to the main server or a virtual host, "
        "flags the line once (saying how many servers inherit it) when the MPM in effect is "
        "prefork (mpm-itk runs on top of prefork, so it counts) while mod_http2 is loaded, "
        "and, with its own message, when mod_http2 is not loaded at all. The finding names "
        "the line that loads the MPM. `h2c` alone is left alone: under prefork mod_http2 "
        "still answers a client that starts with the HTTP/2 preface (prior knowledge), it "
        "only stops offering h2c in an Upgrade. A config linted without its LoadModule "
        "lines (a lone site file) is judged only when --mpm prefork is given, and a tree "
        "without LoadModule lines is never told that mod_http2 is missing."
    ),
    why=(
        "mod_http2 looks at the MPM when httpd starts. With prefork it logs AH10034 (the "
        "mpm module is not supported, the HTTP/2 protocol will be inactive) and from then on "
        "ALPN never selects h2: every browser gets HTTP/1.1 over TLS. Without mod_http2 "
        "`Protocols` is still a valid core directive, httpd accepts the `h2` token and never "
        "selects it, and it logs nothing. Either way the admin believes the site speaks "
        "HTTP/2 (one connection per visitor, requests multiplexed) while browsers open up "
        "to six HTTP/1.1 connections and a TLS handshake for each; capacity planned for "
        "HTTP/2 visitors is then wrong. The common case is a shared host whose panel keeps "
        "prefork for mod_php and has Debian's http2.conf enabled."
    ),
    evidence=(
        "Checked on Debian's httpd 2.4.71 (mod_http2 2.0.42): a TLS virtual host with "
        "`Protocols h2 http/1.1` answered `curl --http2` with HTTP/2 under event and with "
        "HTTP/1.1 under prefork, whose error log said AH10034; with mod_http2 not loaded it "
        "answered HTTP/1.1 and logged nothing. What it costs, measured (bench/h2_protocols.py, "
        "docs/bench.md, 2026-12-07: Debian's stock pools on half a core, HTTPS at 50 ms, "
        "browser visits of 3 pages, medians of three interleaved rounds): prefork served 96 "
        "pages/s over HTTP/1.1 (1.31 connections and TLS handshakes a page), event 240 over "
        "HTTP/2 (0.33) and 147 over HTTP/1.1; the tuner's session with 70 % of the visitors on "
        "HTTP/2 measured the move from prefork to event at x1.98 (docs/tune.md)."
    ),
    bad=(
        "LoadModule mpm_prefork_module modules/mod_mpm_prefork.so\n"
        "LoadModule http2_module modules/mod_http2.so\nProtocols h2 http/1.1"
    ),
    good=(
        "LoadModule mpm_event_module modules/mod_mpm_event.so\n"
        "LoadModule http2_module modules/mod_http2.so\nProtocols h2 http/1.1"
    ),
    fix=(
        "Either leave prefork for event (PHP then runs in php-fpm through mod_proxy_fcgi; "
        "Debian: `a2dismod php8.2 mpm_prefork && a2enmod mpm_event proxy_fcgi && a2enconf "
        "php8.2-fpm`), or drop h2 from Protocols so that the config says what the server "
        "does. Where mod_http2 is missing, load it (`a2enmod http2`) or drop h2. No edit "
        "is offered: which of the two is right depends on what keeps the site on prefork."
    ),
    references=(
        "https://httpd.apache.org/docs/2.4/mod/mod_http2.html",
        "https://httpd.apache.org/docs/2.4/howto/http2.html (MPM configuration)",
        "https://httpd.apache.org/docs/2.4/mod/core.html#protocols",
        "RFC 7301 (ALPN), RFC 9113 (HTTP/2)",
    ),
)


def _prefork(ctx: LintContext) -> bool:
    return ctx.mpm in ("prefork", "itk") or ctx.has_module("mpm_itk_module")


def _mpm_line(ctx: LintContext) -> Directive | None:
    """The LoadModule line of prefork (or of mpm-itk, which runs on it)."""
    for module_id in ("mpm_prefork_module", "mpm_itk_module"):
        line = ctx.load_module_line(module_id)
        if line is not None:
            return line
    return None


def _place(mpm: Directive | None, protocols: Directive) -> str:
    """How the finding names the MPM line: by line number in the same file."""
    if mpm is None:
        return "prefork, compiled in or given with --mpm"
    at = f"line {mpm.line}" if mpm.file == protocols.file else f"{mpm.file}:{mpm.line}"
    return f"LoadModule {mpm.args[0]} at {at}"


def _servers(offers: list[ProtocolOffer]) -> str:
    """`the main server and 3 virtual hosts that inherit it`, or one host's name."""
    if len(offers) == 1:
        return offer_name(offers[0])
    hosts = sum(1 for offer in offers if offer.vhost is not None)
    noun = "virtual host that inherits" if hosts == 1 else "virtual hosts that inherit"
    if offers[0].vhost is None:
        return f"the main server and {hosts} {noun} it"
    return f"{hosts} virtual hosts"


def _h2_lines(ctx: LintContext) -> list[tuple[Directive, list[ProtocolOffer]]]:
    """Each Protocols line that offers h2, with the servers it applies to."""
    if not any("h2" in (word.lower() for word in node.args) for node in ctx.directives("Protocols")):
        return []  # no line offers h2 (httpd's default offers http/1.1 alone): no host to work out
    by_line: dict[int, tuple[Directive, list[ProtocolOffer]]] = {}
    for offer in protocol_offers(ctx):
        if offer.h2 and offer.line is not None:
            by_line.setdefault(id(offer.line), (offer.line, []))[1].append(offer)
    return list(by_line.values())


def _prefork_advice(ctx: LintContext) -> str:
    bound = sorted({label for module_id, label in _PREFORK_BOUND.items() if ctx.has_module(module_id)})
    if not bound:
        return "Move to event (PHP through php-fpm) or drop h2 from the line."
    names = " and ".join(bound)
    verb, them = ("keeps", "it") if len(bound) == 1 else ("keep", "them")
    return (f"{names} {verb} this server on prefork: drop h2 from the line, or replace {them} "
            "(PHP through php-fpm, per-site pools) and move to event.")


def check(ctx: LintContext, report: Report) -> None:
    if not ctx.at_least(2, 4, 17):  # Protocols and mod_http2 came with 2.4.17
        return
    lines = _h2_lines(ctx)
    if not lines:
        return
    prefork = _prefork(ctx)
    loaded = http2_loaded(ctx)
    # Only a whole config says what is not loaded: a site file linted with
    # --mpm alone counts as "modules known" and loads nothing.
    missing = not loaded and ctx.modules_known and bool(ctx.raw_directives("LoadModule"))
    if not prefork:
        if not missing:
            return
        for line, offers in lines:
            report(line, f"Protocols offers h2 to {_servers(offers)}, but mod_http2 is not "
                         "loaded: httpd accepts the h2 token, never selects it and logs "
                         "nothing, so every client gets HTTP/1.1. Load mod_http2 (`a2enmod "
                         "http2`) or drop h2 from the line.")
        return
    mpm = _mpm_line(ctx)
    related = (mpm.file, mpm.line) if mpm is not None else None
    advice = _prefork_advice(ctx)
    for line, offers in lines:
        place = _place(mpm, line)
        if not missing:
            reason = (f"the MPM is prefork ({place}), under which mod_http2 stays inactive "
                      "(AH10034 at start-up) and ALPN never selects h2")
        else:
            reason = (f"mod_http2 is not loaded, and under the prefork MPM ({place}) it would "
                      "stay inactive anyway")
        report(line, f"Protocols offers h2 to {_servers(offers)}, but {reason}: every client "
                     f"gets HTTP/1.1. {advice}", related=related)


RULE = Rule(code="E408", slug="h2-never-negotiated", severity="warning", category="correctness",
            directives=("Protocols", "LoadModule"), doc=DOC, check=check)
