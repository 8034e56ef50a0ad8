"""A trial's load for the browser-like workload (`--workload browser`), by protocol.

HTTP/1.1 ("h1"): httperf sessions from a session log of visits, a page's
assets sent as a burst over up to six connections once the page's reply is
in. HTTP/2 ("h2"): h2load, one connection a visitor, the same kind of visit
as a timing script whose assets go out as concurrent streams. The files are
written once into the sandbox's directory (beside almeida.wlog), named by
what they hold.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from advisor.errors import AdvisorError, UsageError
from advisor.tuner.load import browser_pages, h2load
from advisor.tuner.load.roundtrips import RTT_ON_LINK
from advisor.tuner.trial.result import TrialInputs

PROTOCOLS = ("h1", "h2", "mix")
BROWSER_WORKLOAD = "browser"


class ProtocolNotNegotiated(AdvisorError):
    """A trial that asked for HTTP/2 was answered over another protocol: its
    figure would be an HTTP/1.1 one under an "h2" label."""


def _work_dir(inputs: TrialInputs) -> Path:
    if not inputs.uri_list:
        raise UsageError("the browser workload needs the sandbox's file set",
                         hint="run it against a sandbox (staging up) or a --workdir holding almeida.wlog")
    return Path(inputs.uri_list).parent


def _write_once(path: Path, text: str) -> str:
    if not path.exists() or path.read_text() != text:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return str(path)


def visit_shape(inputs: TrialInputs) -> tuple[int, float]:
    """(pages a visit, think seconds between pages) from the trial's session settings."""
    if not inputs.wsess:
        raise UsageError("the browser workload is made of visits",
                         hint="give --num-calls (pages a visit) and --think (seconds between pages)")
    return inputs.wsess[1], inputs.wsess[2]


def browser_session_log(inputs: TrialInputs) -> str:
    """httperf's --wsesslog file of visits (HTTP/1.1)."""
    pages, think = visit_shape(inputs)
    visits = browser_pages.make_visits(browser_pages.SESSION_LOG_VISITS, pages)
    path = _work_dir(inputs) / f"browser-{pages}p-{think:g}s.sesslog"
    return _write_once(path, browser_pages.httperf_session_log(visits, think))


def h2_spec(inputs: TrialInputs, base_url: str, visitors: int | None = None) -> h2load.H2loadSpec:
    """h2load's run for an HTTP/2 trial at the inputs' rate (visitors a second)."""
    if not base_url.startswith("https://"):
        raise UsageError("HTTP/2 trials need TLS: browsers speak HTTP/2 only over TLS (h2)",
                         hint="start the sandbox with --tls --h2, or give an https:// --url")
    pages, think_s = visit_shape(inputs)
    visit = browser_pages.make_visits(1, pages)[0]
    # Where the round trip is added (no delaying link), the think time already
    # carries it (with_rtt), as httperf's sessions do, and the assets follow
    # the page's reply at once, as httperf's bursts do; on a delaying link the
    # script waits the round trip the page's reply takes.
    link_rtt_ms = inputs.rtt_ms if inputs.rtt_how == RTT_ON_LINK else 0.0
    directory = _work_dir(inputs)
    script = directory / f"browser-{pages}p-{think_s:g}s-{link_rtt_ms:g}ms.h2script"
    _write_once(script, browser_pages.h2load_timing_script(visit, base_url, think_s, link_rtt_ms))
    # A visitor's connection stays open through its think times; h2load must
    # not call it dead before the visit ends.
    visit_s = (pages - 1) * think_s + pages * (2 * inputs.rtt_ms / 1000.0)
    return h2load.H2loadSpec(script=str(script), visitors=visitors or inputs.num_conns, rate=inputs.rate,
                             log_file=str(directory / "h2load-requests.tsv"), client_cpus=inputs.client_cpus,
                             inactivity_timeout_s=inputs.timeout_s + visit_s)


def sized(spec: h2load.H2loadSpec, visitors: int) -> h2load.H2loadSpec:
    """The same run with another number of visitors (a warm-up's length)."""
    return replace(spec, visitors=visitors)


def h2_result(process, spec: h2load.H2loadSpec, timeout: float):
    """The run's report in httperf's terms; refused when HTTP/2 was not what the server spoke."""
    report = h2load.finish(process, timeout)
    if not spec.http1 and report.application_protocol not in (None, "h2"):
        raise ProtocolNotNegotiated(
            f"the trial asked for HTTP/2 and the server answered with {report.application_protocol}: "
            "its figure would not be an HTTP/2 one",
            hint="mod_http2 does not run under prefork (AH10034); use --mpm event or worker, load mod_http2 "
                 "and offer it (Protocols h2 http/1.1), or measure with --protocol h1")
    log = h2load.RequestLog.read(spec.log_file) if spec.log_file and Path(spec.log_file).exists() else None
    return h2load.as_httperf(report, spec, log)
