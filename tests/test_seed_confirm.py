"""bench/seed_confirm.py: how a tune_bench seed's confirmation is judged and
summed up (the measuring itself needs the sandbox for hours: bench only)."""

from __future__ import annotations

import importlib.util
import math

import pytest

from conftest import REPO


@pytest.fixture(scope="module")
def seed_confirm():
    spec = importlib.util.spec_from_file_location("seed_confirm", REPO / "bench" / "seed_confirm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def line(seed: int, tuner: list[float], rand: list[float], searched: float, rel_sd: float, name="stock") -> dict:
    return {"kind": "seed", "name": name, "seed": seed, "bayesian_s": 600.0,
            "bayesian_searched": {"figure": searched, "count": 1, "rel_sd": rel_sd, "bound": None},
            "confirm": {"bayesian": tuner, "random": rand}}


def test_a_tuner_clearly_ahead_and_a_searched_figure_far_off(seed_confirm):
    judged = seed_confirm.judge(*(lambda one: (one, one["confirm"]))(
        line(0, [1200.0, 1230.0, 1190.0, 1210.0, 1220.0], [1000.0, 1010.0, 990.0, 1005.0, 995.0], 1500.0, 0.03)))
    assert judged["verdict"] == "ahead" and judged["low"] > 1.15
    check = judged["searched_check"]
    # 1,500 searched against 1,210 confirmed, the runs spreading by about 1 %: outside.
    assert not check["within"] and check["gap"] == pytest.approx(1210.0 / 1500.0 - 1.0)


def test_within_noise_and_a_searched_figure_within_the_runs_spread(seed_confirm):
    one = line(1, [1100.0, 900.0, 1000.0], [1050.0, 950.0, 980.0], 1080.0, 0.03)
    judged = seed_confirm.judge(one, one["confirm"])
    assert judged["verdict"] == "within noise" and judged["low"] < 1 < judged["high"]
    assert judged["run_to_run"] is not None and judged["searched_check"]["within"]
    assert judged["searched_check"]["held_to"] > 0.03  # the runs' spread is part of it


def test_a_failed_run_is_left_out_and_too_few_rounds_are_undetermined(seed_confirm):
    one = line(2, [1000.0, math.nan], [900.0, 910.0], 1000.0, 0.03)
    judged = seed_confirm.judge(one, one["confirm"])
    assert judged["pairs"] == 1 and judged["verdict"] == "undetermined"


def test_the_summary_counts_each_start_against_the_issues_criteria(seed_confirm):
    lines = [line(0, [1200.0, 1210.0, 1190.0], [1000.0, 1010.0, 990.0], 1205.0, 0.03),
             line(1, [1000.0, 1010.0, 990.0], [1200.0, 1210.0, 1190.0], 1500.0, 0.03),
             line(0, [500.0, 520.0, 480.0], [510.0, 500.0, 490.0], 505.0, 0.05, name="worst"),
             {"kind": "start", "name": "stock"}]
    text = "\n".join(seed_confirm.summarise(lines))
    assert "| stock | 2 (0, 1) | 1 of 2 | 1 | 1 | x1.000 | 1 of 2" in text
    assert "| worst | 1 (0) | 1 of 1 | 0 | 0 |" in text
    assert "| stock | 1 | 1,000.0 | 1,200.0 |" in text and "behind" in text
