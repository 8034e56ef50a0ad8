"""Kegel's memory sum, httpd's own pool corrections, and apache2buddy's figure."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.capacity.sizing import (
    GIB,
    KIB,
    MIB,
    ChildMemory,
    MemoryInputs,
    Quantity,
    child_bytes_for,
    effective_mpm_settings,
    format_size,
    memory_at,
    parse_size,
    recommend,
)
from advisor.errors import UsageError


@pytest.mark.parametrize(
    ("text", "expected"),
    [("512M", 512 * MIB), ("2G", 2 * GIB), ("1.5GiB", 1536 * MIB), ("64k", 64 * KIB), ("64KB", 64 * KIB),
     ("1048576", 1048576), (" 8 MiB ", 8 * MIB), ("0.5t", 512 * GIB), (".5G", 512 * MIB)],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "two gigs", "2X", "-1G", "1.2.3M", "G", "2 G B"])
def test_parse_size_refuses_garbage(text):
    with pytest.raises(UsageError) as info:
        parse_size(text, "--ram")
    assert "--ram" in info.value.render() and "512M" in info.value.render()


@given(st.integers(0, 2**50))
def test_format_size_round_trips_within_display_precision(n):
    shown = format_size(n)
    back = parse_size(shown.replace(" ", "").replace("B", "") if not shown.endswith(" B") else shown[:-2])
    assert abs(back - n) <= max(0.051 * n, 1)


def kegel_inputs(ram: int, child: int = 256 * KIB, largest: int | None = None, services: int = 0,
                 docs: int = 8 * MIB, conn: int = 64 * KIB) -> MemoryInputs:
    """Kegel's 1997 constants: 8 MB OS, 256 KB per process, 64 KB per connection."""
    return MemoryInputs(
        ram=Quantity(ram, "test"),
        os_reserve=Quantity(8 * MIB, "Kegel"),
        services=[Quantity(services, "test", "db")] if services else [],
        parent=Quantity(0, "test"),
        child=ChildMemory(child, child, largest or child, 3, "test", "prefork", 1),
        thread=Quantity(256 * KIB, "test"),
        connection=Quantity(conn, "test"),
        doc_set=Quantity(docs, "test"),
    )


def test_kegel_sum_for_250_clients():
    # Kegel (1997): 8 MB OS + 250 x (256 KB + 64 KB) + an 8 MB document tree.
    need = 8 * MIB + 250 * (256 + 64) * KIB + 8 * MIB
    rec = recommend(kegel_inputs(need), "prefork", 1)
    assert rec.max_request_workers == 250 and rec.server_limit == 250
    assert rec.total_bytes == need
    assert [line.bytes for line in rec.lines] == [8 * MIB, 0, 8 * MIB, 250 * 256 * KIB, 250 * 64 * KIB]
    # One byte less and one worker no longer fits.
    assert recommend(kegel_inputs(need - 1), "prefork", 1).max_request_workers == 249


def test_threaded_pool_is_whole_children():
    inputs = kegel_inputs(4 * GIB, child=20 * MIB)
    rec = recommend(inputs, "worker", 25)
    assert rec.max_request_workers % 25 == 0
    assert rec.server_limit == rec.max_request_workers // 25 == rec.processes
    assert rec.thread_limit >= 25
    # The sum at the recommendation fits, and one more child would not.
    assert rec.total_bytes <= inputs.ram.bytes
    per_child = child_bytes_for(inputs.child, "worker", 25, inputs.thread.bytes) + 25 * 64 * KIB
    assert rec.total_bytes + per_child > inputs.ram.bytes


def test_event_counts_its_extra_connections():
    inputs = kegel_inputs(4 * GIB, child=20 * MIB, conn=1 * MIB)
    worker = recommend(inputs, "worker", 25)
    event = recommend(inputs, "event", 25, async_factor=2.0)
    assert event.connections_per_worker == 3.0
    assert event.max_request_workers < worker.max_request_workers
    conn_line = event.lines[-1]
    assert conn_line.label == f"{event.max_request_workers * 3} x TCP connection"


def test_child_of_more_threads_costs_more_never_less():
    measured = ChildMemory(10 * MIB, 12 * MIB, 14 * MIB, 5, "m", "prefork", 1)
    assert child_bytes_for(measured, "prefork", 1, 256 * KIB) == 14 * MIB
    assert child_bytes_for(measured, "event", 25, 256 * KIB) == 14 * MIB + 24 * 256 * KIB
    threaded = ChildMemory(10 * MIB, 12 * MIB, 14 * MIB, 5, "m", "worker", 25)
    assert child_bytes_for(threaded, "prefork", 1, 256 * KIB) == 14 * MIB
    assert child_bytes_for(threaded, "worker", 25, 256 * KIB, "average") == 12 * MIB


def test_apache2buddy_figure_and_its_tolerance():
    inputs = kegel_inputs(1 * GIB, child=5 * MIB, largest=10 * MIB, services=200 * MIB)
    buddy = recommend(inputs, "prefork", 1).apache2buddy
    assert buddy.remaining == 1 * GIB - 200 * MIB
    assert buddy.high == (1024 - 200) // 10
    assert buddy.low == math.floor(0.9 * buddy.high)


def test_disagreement_is_explained_term_by_term():
    inputs = kegel_inputs(2 * GIB, child=10 * MIB, docs=300 * MIB, conn=256 * KIB)
    rec = recommend(inputs, "prefork", 1)
    buddy = rec.apache2buddy
    assert rec.max_request_workers < buddy.low
    head, *steps = rec.explanation
    assert f"({rec.max_request_workers}) is fewer" in head and f"{buddy.low}-{buddy.high}" in head
    assert any("hot document set (300 MiB)" in s for s in steps)
    assert any("socket memory" in s for s in steps)
    # The steps account for the whole difference.
    lost = sum(int(re.match(r"-(\d+) ", s).group(1)) for s in steps)
    assert buddy.high - lost == rec.max_request_workers


def test_no_explanation_when_they_agree():
    inputs = kegel_inputs(2 * GIB, child=10 * MIB, docs=0, conn=0)
    inputs.os_reserve = Quantity(0, "none")
    rec = recommend(inputs, "prefork", 1)
    assert rec.apache2buddy.low <= rec.max_request_workers <= rec.apache2buddy.high
    assert rec.explanation == []


def test_nothing_fits_when_fixed_terms_exceed_ram():
    rec = recommend(kegel_inputs(16 * MIB, docs=64 * MIB), "prefork", 1)
    assert rec.max_request_workers == 0
    assert any("exceed RAM" in note for note in rec.notes)


def test_huge_host_is_capped_by_httpd_limits():
    rec = recommend(kegel_inputs(4096 * GIB, child=64 * KIB, conn=0), "worker", 25)
    assert rec.server_limit == 20_000 and rec.limited_by != "RAM"


# ---- what httpd really runs ---------------------------------------------------


def test_prefork_mrw_above_server_limit_is_lowered():
    s = effective_mpm_settings("prefork", 400, None, None, None)
    assert s.max_request_workers == 256 and s.written_max_request_workers == 400
    assert "lowers it to 256" in s.notes[0]
    assert effective_mpm_settings("prefork", 400, 400, None, None).max_request_workers == 400
    assert effective_mpm_settings("prefork", None, 1000, None, None).max_request_workers == 256


def test_threaded_defaults_and_corrections():
    assert effective_mpm_settings("event", None, None, None, None).max_request_workers == 400
    worker = effective_mpm_settings("worker", 150, None, 64, None)
    assert worker.max_request_workers == 128 and "rounds it down" in worker.notes[0]
    big = effective_mpm_settings("event", 1000, None, None, None)
    assert big.max_request_workers == 400 and "raise ServerLimit to 40" in big.notes[0]
    small = effective_mpm_settings("event", 10, None, None, None)
    assert small.max_request_workers == 25
    capped = effective_mpm_settings("worker", None, None, 100, None)
    assert capped.threads_per_child == 64 and "ThreadLimit 64" in capped.notes[0]
    assert effective_mpm_settings("event", None, None, None, None, 3.0).async_factor == 3.0


def test_memory_of_the_current_pool():
    inputs = kegel_inputs(64 * MIB)
    settings = effective_mpm_settings("prefork", 150, None, None, None)
    total, lines = memory_at(inputs, settings)
    assert total == 8 * MIB + 8 * MIB + 150 * (256 + 64) * KIB
    assert total < 64 * MIB  # Kegel's 64 MB box: 150 processes fit once nothing else grows
    assert lines[-2].label == "150 x child"
