"""HTTP/2's own limits in a trial's verdict: mod_http2's workers and the
streams a session may carry, each named with the directive line in use.

The verdict of tuner/trial/verdict.py knows the MPM's pool, the CPU and the
network: a trial whose HTTP/2 visitors wait on mod_http2 shows none of them
saturated. Two limits of mod_http2 bind on the browser workload, whose page
sends its assets (Almeida's workload A: 4.2 a page on average) as
concurrent streams once the HTML is in:
- H2MaxSessionStreams below the page's assets: the client may not open
  them all at once, so the rest wait a round trip each (the cap holds for
  every page, whatever the load);
- mod_http2's workers (H2MaxWorkers a child): each open stream needs one
  until its reply is produced. A child with fewer than a page's assets
  serialises every page; one whose open streams reach the limit in the
  trial's readings (advisor.tuner.measure.h2_status) queues them.
Flow control is not among them on this workload: H2WindowSize is the window
for what a client uploads (the browser workload sends no body), the window
a reply goes out under is the client's own, and neither shows in mod_status.
What does bear on replies is H2StreamMaxMemSize, the reply data a stream
buffers before its worker waits for the connection to send it: it is named
beside exhausted workers when a page's largest file is bigger.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.tuner.trial.verdict import MIN_SATURATED_SHARE, Verdict

H2_WORKERS_EXHAUSTED = "h2 workers exhausted"
H2_STREAMS_CAPPED = "h2 streams per session capped"
H2_LABELS = (H2_WORKERS_EXHAUSTED, H2_STREAMS_CAPPED)
DEFAULT_SESSION_STREAMS = 100
DEFAULT_THREADS_PER_CHILD = 25
# mod_http2 2.0 on httpd 2.4.71 logged "workers_max=37" (AH03200) at 25
# threads a child: 3/2 of ThreadsPerChild. Its "stream_mem=32768" is this
# build's H2StreamMaxMemSize default; the documentation says 65,536.
DEFAULT_WORKERS_PER_THREAD = 1.5
DEFAULT_STREAM_MEM = 32768
# Labels an h2 limit takes the place of: nothing saturated, or the MPM's
# pool, which an HTTP/2 session holds while its streams wait for h2 workers.
REPLACEABLE = ("none", "worker pool exhausted", "keep-alive holding workers")
MIN_BUSY_READINGS = 2


@dataclass(frozen=True)
class H2Setting:
    """One mod_http2 limit in use: its value and where it is set ("default" when unset)."""

    name: str
    value: int
    where: str

    @property
    def text(self) -> str:
        if self.where == "default":
            return f"{self.name} {self.value} (default, not set)"
        return f"{self.where}: {self.name} {self.value}"


@dataclass(frozen=True)
class H2Facts:
    max_session_streams: H2Setting
    max_workers: H2Setting
    stream_max_mem: H2Setting


def _setting(cfg, name: str, default: int) -> H2Setting:
    node = cfg.server_value(name)
    if node is not None:
        try:
            return H2Setting(name, int(node.raw_args.strip()), f"{node.file}:{node.line}")
        except ValueError:
            pass
    return H2Setting(name, default, "default")


def h2_facts_from(cfg) -> H2Facts:
    """mod_http2's limits at server scope of a config (advisor.config's Config)."""
    threads = _setting(cfg, "ThreadsPerChild", DEFAULT_THREADS_PER_CHILD).value
    return H2Facts(max_session_streams=_setting(cfg, "H2MaxSessionStreams", DEFAULT_SESSION_STREAMS),
                   max_workers=_setting(cfg, "H2MaxWorkers", int(threads * DEFAULT_WORKERS_PER_THREAD)),
                   stream_max_mem=_setting(cfg, "H2StreamMaxMemSize", DEFAULT_STREAM_MEM))


def h2_facts(target) -> H2Facts | None:
    """The limits in the target's config in effect, or None when it cannot be read."""
    from advisor.config.loader import load_config
    from advisor.errors import AdvisorError

    try:
        source = target.config_source()
        return h2_facts_from(load_config(*source)) if source is not None else None
    except (AdvisorError, OSError):
        return None


@dataclass(frozen=True)
class PageShape:
    """What one page of the trial's visit asks at once: its assets, and its largest file."""

    parallel_assets: int
    largest_reply_bytes: int


def page_shape(pages_per_visit: int) -> PageShape:
    """The h2 trial's visit (browser_load.h2_spec sends the first visit of make_visits)."""
    from advisor.tuner.load.browser_pages import make_visits
    from advisor.tuner.load.workload import ALMEIDA_WORKLOAD_A

    visit = make_visits(1, max(1, pages_per_visit))[0]
    # A class's mean file size: the sandbox draws each file's size around it.
    kb = {klass: total / files for klass, _ext, files, total, _p in ALMEIDA_WORKLOAD_A}
    largest = max((kb.get(uri.split("/")[2], 0) for page in visit.pages for uri in page.assets), default=0)
    return PageShape(parallel_assets=max(len(page.assets) for page in visit.pages),
                     largest_reply_bytes=int(largest * 1024))


def binding_limits(facts: H2Facts, state: dict[str, object], page: PageShape) -> list[dict[str, object]]:
    """Each h2 limit that bound the trial: label, sentence, the line and the figures."""
    found: list[dict[str, object]] = []
    streams = facts.max_session_streams
    seen_streams = state.get("streams_open_per_session_max") if state.get("visible") else None
    if streams.value < page.parallel_assets:
        found.append({
            "label": H2_STREAMS_CAPPED, "config": streams.text, "limit": streams.value,
            "page_parallel_assets": page.parallel_assets, "streams_open_per_session_max": seen_streams,
            "text": (f"{streams.text} lets a session carry {streams.value} stream(s) at once, below the "
                     f"{page.parallel_assets} assets a page asks in parallel: the rest wait a round trip each"
                     + (f" (up to {seen_streams} open per session in mod_status)" if seen_streams else ""))})
    workers = facts.max_workers
    series = [int(v) for v in state.get("streams_open_per_child_series", [])] if state.get("visible") else []
    busy = [v for v in series if v > 0]
    at_limit = [v for v in busy if v >= workers.value]
    share = len(at_limit) / len(busy) if busy else 0.0
    queued = len(at_limit) >= MIN_BUSY_READINGS and share >= MIN_SATURATED_SHARE
    if workers.value < page.parallel_assets or queued:
        why = (f"a page's {page.parallel_assets} assets need {page.parallel_assets} at once"
               if workers.value < page.parallel_assets else
               f"streams open in a child reached it in {len(at_limit)} of {len(busy)} busy readings")
        memory = facts.stream_max_mem
        held = (f"; replies of about {page.largest_reply_bytes:,} bytes (a class's mean size) exceed {memory.text}, so each holds its "
                f"worker until the connection has sent it" if page.largest_reply_bytes > memory.value else "")
        found.append({
            "label": H2_WORKERS_EXHAUSTED, "config": workers.text, "limit": workers.value,
            "page_parallel_assets": page.parallel_assets, "streams_open_per_child_max": max(series, default=None),
            "readings_at_limit": f"{len(at_limit)}/{len(busy)}", "stream_max_mem": memory.text,
            "text": (f"{workers.text}: mod_http2 runs each stream on one of a child's {workers.value} h2 "
                     f"worker(s), and {why}: streams queue for a worker{held}")})
    return found


def h2_verdict(verdict: Verdict, facts: H2Facts | None, state: dict[str, object], page: PageShape) -> Verdict:
    """The verdict with the h2 limits that bound: the first takes the label
    when nothing else saturated (or the MPM's pool did, which the waiting
    sessions hold), otherwise each is a consequence; the evidence keeps them."""
    if facts is None:
        return verdict
    limits = binding_limits(facts, state, page)
    if not limits:
        return verdict
    evidence = {**verdict.evidence, "http2_limits": limits}
    joined = "; ".join(str(limit["text"]) for limit in limits)
    note = f"{verdict.note}; {joined}" if verdict.note else joined
    if verdict.label in REPLACEABLE:
        consequences = list(verdict.consequences)
        if verdict.label != "none":
            consequences.insert(0, {"label": verdict.label, "onset_s": verdict.onset_s})
        consequences += [{"label": limit["label"], "onset_s": None} for limit in limits[1:]]
        return Verdict(str(limits[0]["label"]), {**evidence, "config": limits[0]["config"]}, verdict.onset_s,
                       consequences, note)
    consequences = verdict.consequences + [{"label": limit["label"], "onset_s": None} for limit in limits]
    return Verdict(verdict.label, evidence, verdict.onset_s, consequences, note)


def h2_sampler(target, inputs, interval: float):
    """mod_status's page read through an h2 or mix trial's window (started), or None."""
    if inputs.protocol not in ("h2", "mix") or not target.status_url:
        return None
    from advisor.tuner.measure.h2_status import H2Sampler

    sampler = H2Sampler(target.status_url, interval=interval, max_samples=int(600 / interval))
    sampler.start()
    return sampler


def h2_summary(sampler) -> dict[str, object] | None:
    """The sampler stopped and its readings summarised (None without a sampler)."""
    if sampler is None:
        return None
    from advisor.tuner.measure.h2_status import summarize

    return summarize(sampler.stop(), sampler.reads)


def h2_limits_verdict(target, inputs, verdict: Verdict, state: dict[str, object], served: str | None) -> Verdict:
    """An h2 or mix trial's verdict with mod_http2's limits that bound, when
    the server spoke HTTP/2 to some of its visitors (`served`: the protocol
    the load reports, "h2" or "mix"); `state` gains the limits in use."""
    facts = h2_facts(target)
    if facts is not None:
        state["h2_max_workers"] = facts.max_workers.value
        state["h2_limits_in_use"] = [s.text for s in (facts.max_session_streams, facts.max_workers,
                                                      facts.stream_max_mem)]
    if served not in ("h2", "mix") or not inputs.wsess:
        return verdict
    return h2_verdict(verdict, facts, state, page_shape(inputs.wsess[1]))
