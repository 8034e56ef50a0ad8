"""What the config in effect says about connections and their cost.

Read with the config model at server scope: the cap on requests per
connection (`connection_cap`, and `cap_after` for a candidate's directives),
whether a session's calls each get a connection of their own
(`session_connections`), what makes an HTTPS trial's handshakes
(`tls_causes`), and the per-connection costs a missed probe may name
(`config_facts`).
"""

from __future__ import annotations

from advisor.lint.values import names_a_cache, session_cache_in_effect
from advisor.tuner.measure.tls_probe import TlsTrial
from advisor.tuner.staging.target import StagingTarget
from advisor.tuner.trial.result import TrialInputs
from advisor.tuner.trial.verdict import ConfigFacts, ConnectionCap


def config_in_effect(target: StagingTarget):
    """The target's config read with the config model, or None when it cannot be read."""
    from advisor.config.loader import load_config
    from advisor.errors import AdvisorError

    try:
        source = target.config_source()
        return load_config(*source) if source is not None else None
    except (AdvisorError, OSError):
        return None


def config_facts(target: StagingTarget) -> ConfigFacts:
    """The per-connection costs the config in effect sets at server scope
    (MaxConnectionsPerChild N > 0, HostnameLookups On or Double), with the
    file:line of each; `read` False when the config cannot be read."""
    cfg = config_in_effect(target)
    if cfg is None:
        return ConfigFacts(read=False)
    facts = ConfigFacts()
    retire = cfg.server_value("MaxConnectionsPerChild") or cfg.server_value("MaxRequestsPerChild")
    try:
        count = int(retire.raw_args.strip()) if retire is not None else 0
    except ValueError:
        count = 0
    if count > 0:
        facts.max_connections_per_child = (count, f"{retire.file}:{retire.line}")
    lookups = cfg.server_value("HostnameLookups")
    value = lookups.raw_args.strip().strip('"') if lookups is not None else ""
    if value.lower() in ("on", "double"):
        facts.hostname_lookups = (value, f"{lookups.file}:{lookups.line}")
    return facts


def connection_cap(target: StagingTarget) -> ConnectionCap | None:
    """What the server's configuration lets one connection carry, if it caps it.

    Read with the config model: KeepAlive Off, else MaxKeepAliveRequests N
    (N > 0), at server scope, with the file and line that set it. None when
    the config cannot be read: the verdict then says nothing about it.
    """
    cfg = config_in_effect(target)
    if cfg is None:
        return None
    keepalive = cfg.server_value("KeepAlive")
    if keepalive is not None and keepalive.raw_args.strip().lower() == "off":
        return ConnectionCap(f"KeepAlive {keepalive.raw_args.strip()}", keepalive.file, keepalive.line, 1)
    limit = cfg.server_value("MaxKeepAliveRequests")
    try:
        count = int(limit.raw_args.strip()) if limit is not None else 0
    except ValueError:
        return None
    if count > 0:
        return ConnectionCap(f"MaxKeepAliveRequests {count}", limit.file, limit.line, count + 1)
    return None


def tls_causes(target: StagingTarget, tls: TlsTrial | None, inputs: TrialInputs | None = None,
               cfg=None) -> list[str]:
    """What makes an HTTPS trial's handshakes: config lines (file:line) and the workload.

    KeepAlive Off or a small MaxKeepAliveRequests close connections that a
    visitor then reopens, each with a handshake; a KeepAliveTimeout no longer
    than the sessions' think time closes them between a visitor's calls;
    SSLSessionCache none (or none set) makes every reconnect a full
    handshake. Read with the config model, at server scope; empty when the
    config cannot be read.
    """
    causes: list[str] = []
    if inputs is not None and not inputs.wsess and inputs.num_calls == 1:
        causes.append("the workload: one request per connection, each a new visitor (--num-calls 1, no sessions)")
    if inputs is not None and inputs.tls_resume == "never":
        causes.append("the workload: --tls-resume never (every connection a full handshake)")
    if cfg is None:
        cfg = config_in_effect(target)
    if cfg is None:
        return causes

    def at(directive) -> str:
        return f"{directive.file}:{directive.line}: {directive.name} {directive.raw_args.strip()}"

    keepalive = cfg.server_value("KeepAlive")
    if keepalive is not None and keepalive.raw_args.strip().lower() == "off":
        causes.append(at(keepalive))
    limit = cfg.server_value("MaxKeepAliveRequests")
    try:
        if limit is not None and 0 < int(limit.raw_args.strip()) < 100:
            causes.append(at(limit))
    except ValueError:
        pass
    timeout = cfg.server_value("KeepAliveTimeout")
    think = inputs.wsess[2] if inputs is not None and inputs.wsess else None
    try:
        if timeout is not None and think is not None and float(timeout.raw_args.strip().split()[0]) <= think:
            causes.append(at(timeout) + f" (no longer than the sessions' {think:g} s think time)")
    except (ValueError, IndexError):
        pass
    cache = session_cache_in_effect(cfg.server_directives("SSLSessionCache"))
    if cache is None or not names_a_cache(cache):
        causes.append(at(cache) if cache is not None else "no SSLSessionCache: no session can be resumed")
    return causes


def session_tickets_on(target: StagingTarget, cfg=None) -> str | None:
    """Where the server's TLS session tickets are on (its SSLSessionTickets
    line, or httpd's default when none is written), or None when they are
    off or the config cannot be read. A resumption by ticket leaves mod_ssl's
    cache counters: with TLS 1.2 the cache stores nothing, with TLS 1.3 it
    stores one session per resumed handshake as if it were half a full one
    (bench/tls_resumption.py, 2026-12-07), so the trial cannot count its
    handshakes from them."""
    if cfg is None:
        cfg = config_in_effect(target)
    if cfg is None:
        return None
    tickets = cfg.server_value("SSLSessionTickets")
    if tickets is None:
        return "SSLSessionTickets on (httpd's default: no line sets it)"
    if tickets.raw_args.strip().lower() == "off":
        return None
    return f"{tickets.file}:{tickets.line}: SSLSessionTickets {tickets.raw_args.strip()}"


def cap_after(directives: list[str], cap: ConnectionCap | None) -> ConnectionCap | None:
    """The connection cap once `directives` ("KeepAlive Off", "MaxKeepAliveRequests 3")
    are applied at server scope over a config whose own cap is `cap`.

    For a caller that knows the candidate's directives before they reach the
    server (the tune session); a trial reads the config itself.
    """
    keepalive_off = cap is not None and cap.requests_per_connection == 1 and cap.directive.lower().startswith("keepalive ")
    limit = cap if cap is not None and not keepalive_off else None
    off = cap if keepalive_off else None
    for text in directives:
        name, _, value = text.strip().partition(" ")
        value = value.strip().strip('"')
        if name.lower() == "keepalive":
            off = ConnectionCap(f"KeepAlive {value}", None, None, 1) if value.lower() == "off" else None
        elif name.lower() == "maxkeepaliverequests":
            try:
                count = int(value)
            except ValueError:
                continue
            limit = ConnectionCap(f"MaxKeepAliveRequests {count}", None, None, count + 1) if count > 0 else None
    return off or limit


def session_connections(inputs: TrialInputs, cap: ConnectionCap | None) -> tuple[bool, str]:
    """Whether each call of a session gets a connection of its own, and why.

    A browser that gets "Connection: close" opens a new connection for its
    next request. httperf 0.9.0 over HTTP/1.1 does not: after the think
    time it writes the next call on the closed connection, reads a reset,
    then sends the call again on a new one (every call is answered, but
    each costs a dead write, a reset and an extra connect, and shows as a
    connreset). So when the server closes after every request (KeepAlive
    Off, or a cap of one request) the sessions speak HTTP/1.0, after which
    httperf closes each connection at its reply: the same sessions, calls
    and think times, one connection per request. A cap above one that a
    session outgrows (MaxKeepAliveRequests M, M + 1 < calls) keeps HTTP/1.1:
    the connection carries M + 1 calls as in a browser, and the one
    reconnect after it is httperf's recovered reset, not an error.
    `inputs.connection_per_request` overrides the decision.
    """
    if not inputs.wsess:
        return False, ""
    calls = inputs.wsess[1]
    if inputs.connection_per_request is not None:
        chosen = inputs.connection_per_request
        return chosen, ("per request" if chosen else "persistent") + " (as asked)"
    if cap is not None and cap.requests_per_connection == 1 and calls > 1:
        return True, f"per request ({cap.directive}: the server closes after every reply)"
    if cap is not None and cap.requests_per_connection < calls:
        return False, (f"persistent, reconnecting after {cap.requests_per_connection} calls "
                       f"({cap.directive})")
    return False, "persistent"
