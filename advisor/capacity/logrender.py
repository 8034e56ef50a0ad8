"""Print `capacity --log`'s section: rich tables for people (JSON goes
through jsonable.py). Formatting only: the numbers come from logcapacity.py."""

from __future__ import annotations

import math

from advisor.capacity.logcapacity import LogCapacity, utc
from advisor.capacity.logdemand import ProtocolCount
from advisor.capacity.render import seconds_text


def _factor(value: float) -> str:
    if math.isinf(value):
        return "no limit found"
    return f"x {value:.2f}"


def protocols_text(p: ProtocolCount) -> str:
    """'37.5 % of 1,200 requests over HTTP/2; HTTP/1.1 4.0 requests a connection, HTTP/2 6.0'."""
    text = f"{p.h2_share * 100:.1f} % of {p.requests:,} requests over HTTP/2"
    h1_requests = p.requests - p.h2_requests
    per = []
    if p.h1_connections:
        per.append(f"HTTP/1.x {h1_requests / p.h1_connections:,.1f} requests a connection (%k)")
    if p.h2_connections:
        per.append(f"HTTP/2 {p.h2_requests / p.h2_connections:,.1f} requests a connection (its stream 1)")
    return text + ("; " + ", ".join(per) if per else "")


def render_log_text(log: LogCapacity, console) -> None:
    from rich.table import Table

    d = log.demand
    console.print(f"\n[bold]The log's demand[/]: {', '.join(d.files)}: {d.lines} lines, {d.requests} requests over "
                  f"{d.seconds} s ({utc(d.first)} on); format from {log.format_source}")
    if d.skipped:
        console.print(f"  [yellow]{d.skipped} lines skipped[/]")
        for reason in d.skip_reasons:
            console.print(f"    {reason}")
    rates = Table(title="Requests per second", title_justify="left", show_edge=False)
    for column in ("mean", "busiest minute", "busiest second", "p99 of seconds"):
        rates.add_column(column, justify="right")
    rates.add_row(f"{d.mean_rate:,.1f}", f"{d.busiest_minute_rate:,.1f} ({utc(d.busiest_minute_start)})",
                  f"{d.busiest_second_rate:,} ({utc(d.busiest_second_at)})", f"{d.p99_second_rate:,.0f}")
    console.print(rates)
    if d.hold is not None:
        h = d.hold
        hold = Table(title=f"Time a request held its worker ({h.source}, {h.count:,} requests)", title_justify="left",
                     show_edge=False)
        for column in ("mean", "CV", "min", "median", "p90", "p99", "max"):
            hold.add_column(column, justify="right")
        hold.add_row(seconds_text(h.mean), f"{h.cv:.2f}", seconds_text(h.minimum), seconds_text(h.p50), seconds_text(h.p90),
                     seconds_text(h.p99), seconds_text(h.maximum))
        console.print(hold)
    p = log.pool
    busy = Table(title="Busy workers per second (Little's law: arrivals x hold time)", title_justify="left",
                 show_edge=False)
    for column in ("mean", "p99 of seconds", "busiest second", "MaxRequestWorkers", "slots", "RAM holds"):
        busy.add_column(column, justify="right")
    busy.add_row(f"{d.mean_busy:,.1f}", f"{d.p99_busy:,.1f}", f"{d.peak_busy:,.1f} ({utc(d.peak_busy_at)})",
                 f"{p.max_request_workers} ({p.peak_share_of_pool:.0%} used)",
                 str(p.process_slots), f"{p.ram_workers} ({p.peak_share_of_ram:.0%} used)")
    console.print(busy)
    console.print(f"  keep-alive: {d.keepalive.how}")
    if d.keepalive.counted or d.keepalive.h2_connections:
        console.print(f"  idle keep-alive holds: {d.keepalive.connections + d.keepalive.h2_connections:,} connections"
                      + (f" ({d.keepalive.h2_connections:,} HTTP/2)" if d.keepalive.h2_connections else "")
                      + f", up to {d.keepalive.peak_idle_workers:,.1f} workers in one second; busiest second on "
                      f"requests alone {d.peak_busy_requests:,.1f}")
    if d.protocols is not None:
        console.print(f"  protocols ({d.protocols.source}): {protocols_text(d.protocols)}")
    head = Table(title=f"Headroom: growth on {log.base} ({log.base_rate:,.1f} req/s) before the model predicts "
                       f"> 1 % refused" + (f" or a mean response > {seconds_text(log.target_response)}"
                                           if log.target_response else ""),
                 title_justify="left", show_edge=False)
    for column in ("pool", "workers", "busy now", "growth", "at req/s", "limit"):
        head.add_column(column, justify="left" if column in ("pool", "limit") else "right")
    for row in log.headroom:
        head.add_row(row.label, str(row.workers), f"{row.busy_now:,.1f}", _factor(row.factor),
                     "-" if math.isinf(row.rate) else f"{row.rate:,.1f}", row.limited_by or "-")
    console.print(head)
    console.print(f"  model: {log.model}; {log.arrivals} arrivals")
    if log.full_count:
        shown = ", ".join(log.full_spells)
        more = f" and {log.full_spell_count - len(log.full_spells)} more spells" \
            if log.full_spell_count > len(log.full_spells) else ""
        console.print(f"[bold red]pool full[/] (busy >= {log.full_threshold:.1f} workers) in {log.full_count} "
                      f"seconds, {log.full_spell_count} spells from: {shown}{more}")
    else:
        console.print(f"pool full (busy >= {log.full_threshold:.1f} workers) in no second of the log")
    for note in log.notes:
        console.print(f"note: {note}")
