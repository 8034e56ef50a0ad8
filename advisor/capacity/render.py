"""Print a capacity report: rich tables for people, JSON for programs.

Formatting only: every number and every sentence of advice was decided in
report.py / sizing.py.
"""

from __future__ import annotations

import json

from advisor.capacity.fit_workerpool import PoolFit
from advisor.capacity.jsonable import to_jsonable
from advisor.capacity.protocol_mix import ProtocolMix, holder
from advisor.capacity.queueing_model import Estimate, Prediction
from advisor.capacity.report import CapacityReport
from advisor.capacity.sizing import format_size


def to_json(report: CapacityReport) -> str:
    return json.dumps(to_jsonable(report), indent=2, allow_nan=False)


def seconds_text(value: float) -> str:
    if value != value or value == float("inf"):
        return "-"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1000:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def _with_ci(est: Estimate, fmt) -> str:
    text = fmt(est.value)
    if est.half_width > 0:
        text += f" ± {fmt(est.half_width)}"
    return text


def _percent(value: float) -> str:
    if value <= 0:
        return "0 %"
    if value < 1e-4:
        return "< 0.01 %"
    return f"{value * 100:.2f} %" if value < 0.1 else f"{value * 100:.1f} %"


def _prediction_cells(p: Prediction) -> list[str]:
    return [
        _with_ci(p.throughput, lambda v: f"{v:,.1f}"),
        _with_ci(p.response_time, seconds_text),
        _with_ci(p.blocking, _percent),
    ]


def render_text(report: CapacityReport, console, *, demand_follows: bool = False) -> None:
    """`demand_follows`: the log's section comes next, with predictions of its own (capacity --log)."""
    from rich.table import Table

    s = report.settings
    rec = report.recommended
    mem = report.memory
    head = f"[bold]{report.config_file}[/]: MPM [bold]{s.mpm}[/], MaxRequestWorkers [bold]{s.max_request_workers}[/]"
    if s.written_max_request_workers is not None and s.written_max_request_workers != s.max_request_workers:
        head += f" (written {s.written_max_request_workers})"
    if s.mpm != "prefork":
        head += f", ThreadsPerChild {s.threads_per_child}, ServerLimit {s.server_limit}"
    else:
        head += f", ServerLimit {s.server_limit}"
    console.print(head)

    inputs = Table(title="What the sum starts from", title_justify="left", show_edge=False)
    inputs.add_column("input")
    inputs.add_column("size", justify="right")
    inputs.add_column("source", overflow="fold")
    inputs.add_row("RAM", format_size(mem.ram.bytes), mem.ram.source)
    inputs.add_row("OS and kernel", format_size(mem.os_reserve.bytes), mem.os_reserve.source)
    for q in mem.services:
        inputs.add_row(f"service {q.name}", format_size(q.bytes), q.source)
    inputs.add_row("httpd parent", format_size(mem.parent.bytes), mem.parent.source)
    child = mem.child
    inputs.add_row(
        "httpd child (smallest / average / largest)",
        f"{format_size(child.smallest)} / {format_size(child.average)} / {format_size(child.largest)}",
        child.source,
    )
    inputs.add_row("each extra thread", format_size(mem.thread.bytes), mem.thread.source)
    inputs.add_row("each TCP connection", format_size(mem.connection.bytes), mem.connection.source)
    inputs.add_row("hot document set", format_size(mem.doc_set.bytes), mem.doc_set.source)
    for limit in mem.limits:
        if limit.resource == "cpu":
            inputs.add_row("CPUs", f"{limit.value:.3g}", limit.describe())
    console.print(inputs)

    total = Table(
        title=f"Kegel's sum at the recommended {rec.mpm} pool (MaxRequestWorkers {rec.max_request_workers})",
        title_justify="left", show_edge=False,
    )
    total.add_column("term")
    total.add_column("memory", justify="right")
    total.add_column("why")
    for line in rec.lines:
        total.add_row(line.label, format_size(line.bytes), line.detail)
    total.add_row("[bold]total[/]", f"[bold]{format_size(rec.total_bytes)}[/]",
                  f"of {format_size(mem.ram.bytes)} RAM ({format_size(mem.ram.bytes - rec.total_bytes)} left)")
    console.print(total)

    table = Table(title="Recommended MaxRequestWorkers per MPM", title_justify="left", show_edge=False)
    for column in ("MPM", "MaxRequestWorkers", "ServerLimit", "ThreadsPerChild", "ThreadLimit",
                   "memory per worker", "apache2buddy"):
        table.add_column(column, justify="left" if column == "MPM" else "right")
    for name, r in report.recommendations.items():
        marker = " ← this config" if name == report.applies_to else ""
        buddy = f"{r.apache2buddy.low}-{r.apache2buddy.high}"
        table.add_row(
            f"{name}{marker}",
            str(r.max_request_workers),
            str(r.server_limit),
            str(r.threads_per_child),
            str(r.thread_limit) if name != "prefork" else "-",
            format_size(r.per_worker_bytes),
            buddy + ("*" if r.apache2buddy.note else ""),
        )
    console.print(table)
    if any(r.apache2buddy.note for r in report.recommendations.values()):
        console.print("  * apache2buddy itself only sizes prefork; the same rule applied per child process.")
    for line in rec.explanation:
        console.print(("  " if line.startswith(("-", "+", "capped")) else "") + line)
    for note in rec.notes:
        console.print(f"  note: {note}")
    fits = "fits" if report.current_fits else "[bold red]does not fit[/]"
    console.print(
        f"The pool the config runs now (MaxRequestWorkers {s.max_request_workers}) needs "
        f"{format_size(report.current_total)}: it {fits} in {format_size(mem.ram.bytes)}."
    )

    if isinstance(report.fit, PoolFit):
        _render_pool_fit(report.fit, console)
    elif report.fit:
        f = report.fit
        console.print(
            f"Fit from {f.points} trials: mean service time {seconds_text(f.service_time)} ± "
            f"{seconds_text(f.service_time_se)} (capacity {f.capacity:,.0f} req/s), "
            f"K = {f.k} ± {f.k_se:.0f}, typical error {f.rms_log_error:.1%}."
        )
        for warning in f.warnings:
            console.print(f"  [yellow]fit: {warning}[/]")
        for skipped in f.skipped:
            console.print(f"  fit: skipped {skipped}")

    m = report.model
    if m is None:
        if not demand_follows:
            console.print("No predictions: give --service-time SECONDS or --fit FILE to predict "
                          "response time and blocking.")
    else:
        if m.regime:
            console.print(
                f"Worker-pool model ({m.regime}): {m.arrivals} arrivals, a worker held "
                f"{seconds_text(m.service_time)} per request ({m.service_time_source}), "
                f"capacity {m.capacity:,.3g} req/s with the current pool."
            )
            console.print(f"  K = MaxRequestWorkers + {m.listen_queue} (the listen queue: ListenBacklog, "
                          f"capped by net.core.somaxconn, plus one).")
        else:
            console.print(
                f"Queueing model (Andersson et al. 2003): {m.arrivals} arrivals, {m.service} service, "
                f"mean service time {seconds_text(m.service_time)} ({m.service_time_source}), "
                f"capacity {m.capacity:,.0f} req/s."
            )
        if m.queue_offset and not m.regime:
            console.print(f"  K = MaxRequestWorkers {m.queue_offset:+d} (the listen queue, from the fit).")
        pred = Table(title="Predictions", title_justify="left", show_edge=False)
        pred.add_column("rate (req/s)", justify="right")
        for label, k in (("now", m.k_current), ("recommended", m.k_recommended)):
            pred.add_column(f"{label} K={k}\nthroughput", justify="right")
            pred.add_column("response time", justify="right")
            pred.add_column("turned away", justify="right")
        for row in report.predictions:
            pred.add_row(f"{row.rate:,.4g}", *_prediction_cells(row.current), *_prediction_cells(row.recommended))
        console.print(pred)
        console.print(
            f"In overload a request waits about K / capacity: {seconds_text(m.worst_response_current)} now, "
            f"{seconds_text(m.worst_response_recommended)} recommended; throughput stays at capacity either way."
        )
        methods = sorted({row.current.method for row in report.predictions})
        console.print(f"  method: {', '.join(methods)}")
    if report.fpm_predictions:
        fpm = Table(title="httpd's workers and php-fpm's children in series (M/M/c/K, c = pm.max_children)",
                    title_justify="left", show_edge=False)
        for column in ("pool", "rate", "children", "K", "served/s", "turned away", "waiting", "wait"):
            fpm.add_column(column, justify="right")
        for name, row in report.fpm_predictions:
            fpm.add_row(name, f"{row.rate:,.4g}", str(row.children), str(row.capacity), f"{row.throughput:,.1f}",
                        _percent(row.blocked_share), f"{row.mean_waiting:.1f}", seconds_text(row.mean_wait_s))
        console.print(fpm)
    if report.protocol_mix is not None:
        render_mix(report.protocol_mix, console)
    for note in report.notes:
        console.print(f"[yellow]note:[/] {note}")


def _seconds_or_dash(value: float | None) -> str:
    return "-" if value is None else f"{value:,.3g} s"


def render_mix(mix: ProtocolMix, console) -> None:
    """The protocol mix: one line when every visitor is on HTTP/1.1, else its table and what it changed."""
    from rich.table import Table

    h1 = mix.rows[0]
    if mix.share <= 0:
        who = "every visitor on HTTP/1.1" if mix.asked_share <= 0 else \
            f"{mix.asked_share * 100:.0f} % of visitors would speak HTTP/2, all are served HTTP/1.1"
        idle = f"idle connections hold {holder(mix.mpm)} {h1.idle_worker_seconds:.3g} s a page" \
            if h1.idle_worker_seconds else f"idle connections hold no {holder(mix.mpm, plural=False)}"
        console.print(f"Protocol mix: {who} ({mix.source}): {h1.connections:.2f} connections and "
                      f"{h1.handshakes:.2f} TLS handshakes a page of {mix.requests_per_page:g} requests; {idle}.")
        for note in mix.notes:
            console.print(f"  [yellow]protocols:[/] {note}")
        return
    table = Table(title=f"Protocol mix: {mix.share * 100:.0f} % of visitors on HTTP/2 ({mix.source}), "
                        f"{mix.requests_per_page:g} requests a page, {holder(mix.mpm)}",
                  title_justify="left", show_edge=False)
    for column in ("per page", "share", "connections", "TLS handshakes", "held idle", f"{holder(mix.mpm)} held",
                   "h2 workers busy"):
        table.add_column(column, justify="left" if column == "per page" else "right")
    for row in mix.rows:
        table.add_row(row.protocol, f"{row.share * 100:.0f} %", f"{row.connections:.2f}", f"{row.handshakes:.2f}",
                      _seconds_or_dash(row.idle_worker_seconds), _seconds_or_dash(row.mpm_worker_seconds),
                      _seconds_or_dash(row.h2_worker_seconds))
    console.print(table)
    console.print(f"  h2 workers: H2MinWorkers {mix.h2_min_workers}, H2MaxWorkers {mix.h2_max_workers} a child "
                  f"({mix.h2_workers_source}): {mix.h2_worker_pool} in all")
    if mix.changes:
        console.print("  What HTTP/2 changed against every visitor on HTTP/1.1:")
        for line in mix.changes:
            console.print(f"    {line}")
    for note in mix.notes:
        console.print(f"  [yellow]protocols:[/] {note}")


def _render_pool_fit(f: PoolFit, console) -> None:
    from rich.table import Table

    pm = f.model
    cpu = "measured" if f.cpu_measured else "fitted"
    console.print(
        f"Fit from {f.points} trials: [bold]{f.regime}[/]. Per request {seconds_text(pm.cpu_demand)} of CPU "
        f"({cpu}, {pm.cores:g} core(s)) and {seconds_text(pm.wait)} waiting without CPU "
        f"({seconds_text(pm.reply_tail)} of it after the reply); capacity {f.capacity:,.3g} req/s with "
        f"{f.workers} workers (CPU alone: {pm.cpu_limit():,.3g}, workers alone: {pm.pool_limit(f.workers):,.3g}, "
        f"workers in step: {f.capacity_in_step:,.3g}); "
        f"typical error {f.rms_log_error:.1%}."
    )
    title = "Measured vs predicted, per trial fitted on" + (" and held out" if f.held_out else "")
    table = Table(title=title, title_justify="left", show_edge=False)
    for column in ("rate", "workers", "replies/s", "model", "reply time", "model", "turned away", "model",
                   "busy workers", "model"):
        table.add_column(column, justify="right")
    if f.held_out:
        table.add_column("", justify="left")
    for rows, tag in ((f.comparisons, "fitted"), (f.held_out, "held out")):
        for row in rows:
            cells = [
                f"{row.rate:,.4g}", str(row.workers), f"{row.throughput:,.1f}", f"{row.throughput_predicted:,.1f}",
                seconds_text(row.response_time), seconds_text(row.response_time_predicted),
                "-" if row.turned_away is None else _percent(row.turned_away), _percent(row.turned_away_predicted),
                "-" if row.busy_workers is None else f"{row.busy_workers:.1f}", f"{row.busy_workers_predicted:.1f}",
            ]
            table.add_row(*cells, *([tag] if f.held_out else []))
    console.print(table)
    if f.method:
        console.print(f"  model vs trials: {f.method}")
    for warning in f.warnings:
        console.print(f"  [yellow]fit: {warning}[/]")
    for skipped in f.skipped:
        console.print(f"  fit: skipped {skipped}")
