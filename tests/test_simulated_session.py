"""A whole tune session, plan to report, against the simulated host (bench/simulated_session.py).

Only the server is simulated: the plan, the search, the ablation rounds, the
lint gate, the pruning, the journal and the report are the product's own
phases. A session with a fixed seed is a fixed sequence of points, so two runs
must agree to the byte, and a session interrupted and resumed must keep what
its journal holds and end with the full budget measured.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO

SCRIPT = REPO / "bench" / "simulated_session.py"
BUDGET = 8


def simulated_session(work, *extra: str) -> tuple[int, dict, str]:
    record = work.parent / f"{work.name}-{len(extra)}.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--seed", "3", "--budget", str(BUDGET), "--work", str(work),
                           "--journal-out", str(record), *extra],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode in (0, 130), done.stderr
    return done.returncode, json.loads(record.read_text()), done.stdout


def trial_lines(record: dict) -> list[dict]:
    return [line for line in record["journal"] if line.get("kind") == "trial"]


def test_a_seeded_session_is_one_sequence_of_points(tmp_path):
    _, first, _ = simulated_session(tmp_path / "one")
    _, second, _ = simulated_session(tmp_path / "two")
    assert first == second
    assert len(trial_lines(first)) == BUDGET
    assert len(first["asked"]) > BUDGET, "the ablation rounds measure after the search"
    assert any(line.get("kind") == "ablation" for line in first["journal"])
    assert first["plan"]["budget"] == BUDGET and first["recommendation"]


def test_an_interrupted_session_resumes_from_its_journal(tmp_path):
    _, whole, _ = simulated_session(tmp_path / "whole")
    work = tmp_path / "cut"
    interrupted_at = BUDGET + 2  # two ablation runs journalled
    code, cut, said = simulated_session(work, "--interrupt-after", str(interrupted_at))
    assert code == 130 and cut == {"interrupted_after": interrupted_at}, said
    kept = [json.loads(line) for line in (work / "report" / "journal.jsonl").read_text().splitlines()]
    assert [line.get("kind") for line in kept].count("trial") == BUDGET
    code, resumed, _ = simulated_session(work, "--resume")
    assert code == 0
    # Nothing journalled is measured again: the resumed session asks only what was left.
    assert len(resumed["asked"]) == len(whole["asked"]) - interrupted_at
    assert resumed["journal"][:len(kept)] == whole["journal"][:len(kept)]
    assert len(resumed["journal"]) == len(whole["journal"])
    assert resumed["plan"]["resumed"] == BUDGET


def test_a_resumed_session_whose_probes_missed_with_nothing_named_recommends_what_it_kept(tmp_path):
    """A resumed sandbox session kept four changes on a gain of x6.79 and
    headed its report "recommended: nothing: the objective did not
    respond": every run of its winner had its peak set by a probe that
    missed the SLO with no resource named. Interleaved runs that tell the
    points apart outweigh that; the headline says what is kept."""
    work = tmp_path / "cut"
    code, _, said = simulated_session(work, "--unnamed-misses", "--interrupt-after", str(BUDGET + 2))
    assert code == 130, said
    code, resumed, _ = simulated_session(work, "--unnamed-misses", "--resume")
    assert code == 0
    report = resumed["report"]
    gain = report["gain"]
    assert gain is not None and gain["low"] > 1.0, "the interleaved runs measured a gain beyond noise"
    assert report["no_response"] is None
    assert report["recommendation"]["winner"] == resumed["recommendation"]
    assert report["recommendation"]["changes"], "the report recommends the changes the session kept"
    assert any("verdict \"none\"" in note and "measured the difference all the same" in note
               for note in report["notes"])
