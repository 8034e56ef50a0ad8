"""mod_http2's state read from mod_status, and the verdicts that name HTTP/2's limits (no load).

The pages are the sandbox's own (tests/data/README.md, h2_status/); the
configs are written to a temporary tree and read with the config model, so
each limit's file:line is the one the verdict must name.
"""

from __future__ import annotations

from pathlib import Path

from advisor.config import LoadOptions, load_config
from advisor.tuner.measure.h2_status import parse_status_page, summarize, summary_line
from advisor.tuner.trial.h2_verdict import (H2_STREAMS_CAPPED, H2_WORKERS_EXHAUSTED, PageShape, h2_facts_from,
                                            h2_verdict, page_shape)
from advisor.tuner.trial.verdict import LABELS, Verdict

DATA = Path(__file__).parent / "data" / "h2_status"


def _config(tmp_path: Path, *lines: str):
    main = tmp_path / "httpd.conf"
    main.write_text("\n".join(["ServerRoot /tmp", "LoadModule mpm_event_module modules/mod_mpm_event.so",
                               "LoadModule http2_module modules/mod_http2.so", "ThreadsPerChild 25", *lines]) + "\n")
    return load_config(str(main), LoadOptions(apache_version="2.4.71")), str(main)


def test_the_status_page_gives_each_busy_h2_session_and_its_open_streams():
    reading = parse_status_page((DATA / "event-h2-max-session-streams-2.html").read_text())
    assert reading is not None
    # Four h2load sessions in one child, two streams open on each (H2MaxSessionStreams 2), and
    # curl's own h2 connection reading its first stream; idle slots keep stale lines and are left out.
    loaded = [s for s in reading.sessions if s.opened > 1]
    assert [s.open_now for s in loaded] == [2, 2, 2, 2]
    assert {s.state for s in loaded} == {"schedule", "write"}
    assert len({s.pid for s in loaded}) == 1
    assert max(reading.open_streams_by_child().values()) == 8
    summary = summarize([reading], pages=1)
    assert summary["visible"] and summary["streams_open_per_session_max"] == 2
    assert summary["h2_sessions_busy_max"] == 5 and summary["streams_open_per_child_max"] == 8
    assert "flow-control" in str(summary["flow_control"])
    assert summary_line(summary).startswith("HTTP/2 state (1 readings): up to 5 sessions")


def test_without_extended_status_the_state_is_not_read_and_says_why():
    assert parse_status_page((DATA / "extended-status-off.html").read_text()) is None
    summary = summarize([], pages=3)
    assert summary["visible"] is False and "ExtendedStatus Off" in str(summary["why"])
    assert "--extended-status" in summary_line(summary)
    assert summarize([], pages=0)["why"] == "mod_status did not answer"


def test_a_session_stream_cap_below_the_page_names_its_line(tmp_path):
    cfg, main = _config(tmp_path, "H2MaxSessionStreams 1")
    facts = h2_facts_from(cfg)
    assert facts.max_session_streams.where == f"{main}:5" and facts.max_workers.where == "default"
    assert facts.max_workers.value == 37  # 3/2 of ThreadsPerChild 25, as mod_http2's AH03200 line said
    verdict = h2_verdict(Verdict("none", {}), facts, {"visible": False}, PageShape(4, 8000))
    assert verdict.label == H2_STREAMS_CAPPED in LABELS
    assert verdict.evidence["config"] == f"{main}:5: H2MaxSessionStreams 1"
    assert "below the 4 assets a page asks in parallel" in verdict.note


def test_h2_workers_exhausted_from_the_config_or_from_the_readings(tmp_path):
    cfg, main = _config(tmp_path, "H2MaxWorkers 2")
    facts = h2_facts_from(cfg)
    verdict = h2_verdict(Verdict("worker pool exhausted", {"x": 1}), facts, {"visible": False},
                         PageShape(4, 400_000))
    assert verdict.label == H2_WORKERS_EXHAUSTED in LABELS
    assert verdict.evidence["config"] == f"{main}:5: H2MaxWorkers 2" and verdict.evidence["x"] == 1
    assert verdict.consequences[0]["label"] == "worker pool exhausted"
    assert "exceed H2StreamMaxMemSize 32768 (default, not set)" in verdict.note
    # With the default 37, a page's assets fit; readings at the limit in most busy seconds still bind.
    default = h2_facts_from(_config(tmp_path, "")[0])
    assert h2_verdict(Verdict("none", {}), default, {"visible": True, "streams_open_per_child_series": [3, 5]},
                      PageShape(4, 1000)).label == "none"
    busy = {"visible": True, "streams_open_per_child_series": [0, 37, 40, 12, 38]}
    found = h2_verdict(Verdict("none", {}), default, busy, PageShape(4, 1000))
    assert found.label == H2_WORKERS_EXHAUSTED and found.evidence["http2_limits"][0]["readings_at_limit"] == "3/4"
    assert "H2MaxWorkers 37 (default, not set)" in found.note


def test_a_saturated_resource_keeps_its_label_and_the_h2_limit_follows(tmp_path):
    facts = h2_facts_from(_config(tmp_path, "H2MaxSessionStreams 2", "H2MaxWorkers 1")[0])
    verdict = h2_verdict(Verdict("server CPU", {}, onset_s=1.0), facts, {"visible": False}, PageShape(5, 1000))
    assert verdict.label == "server CPU"
    assert [c["label"] for c in verdict.consequences] == [H2_STREAMS_CAPPED, H2_WORKERS_EXHAUSTED]
    # Nothing binds: the verdict is the same object's figures, untouched.
    untouched = Verdict("none", {"a": 1})
    assert h2_verdict(untouched, h2_facts_from(_config(tmp_path, "")[0]), {"visible": False},
                      PageShape(4, 1000)) is untouched
    assert h2_verdict(untouched, None, {}, PageShape(9, 0)) is untouched


def test_the_page_shape_is_the_h2_trials_visit():
    shape = page_shape(2)
    assert shape.parallel_assets >= 1 and shape.largest_reply_bytes > 0
    assert page_shape(2) == shape  # the same seeded visit every time
