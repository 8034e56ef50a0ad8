"""Read what the capacity models are fitted on: load-test measurements.

Inputs: the JSON `apache-advisor bench` writes (one document per trial, a list
of them, a `{"trials": [...]}` document, or JSON Lines), or a CSV with columns
rate, response_time (seconds) and throughput. Both fits take the
`Observation`s read here: the queueing model's (fit_queueing) uses the rate,
reply time and throughput, the worker-pool model's (fit_workerpool) also what
bench measured beside httperf's numbers.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from typing import Any, Iterable

from advisor.errors import AdvisorError


@dataclass
class Observation:
    rate: float
    """Offered mean arrival rate (requests/s)."""
    response_time: float
    """Mean response time of completed requests (s)."""
    throughput: float
    """Completed requests per second."""
    source: str = ""
    # What bench measures beside httperf's numbers (None from a CSV): the
    # pool model's fit uses them (advisor.capacity.fit_workerpool).
    turned_away: float | None = None
    """Share of the requests asked for that got no reply."""
    workers: int | None = None
    """MaxRequestWorkers of the server the trial ran against."""
    cores: float | None = None
    """Cores the server could use (its pinned cores, or its CPU quota)."""
    busy_workers: float | None = None
    """Mean busy workers on the scoreboard, the status request not counted."""
    cpu_cores: float | None = None
    """Mean cores the httpd tree used (CPU seconds per second)."""
    duration: float | None = None
    """Seconds of offered load; with `timeout`, set only for trials of one
    request per connection at a paced rate, which the pool fit can replay."""
    timeout: float | None = None
    """httperf's timeout, seconds."""
    listen_backlog: int | None = None
    """ListenBacklog the trial ran with, when it set one."""
    burst_cores: float | None = None
    """Under a CPU quota: the cores the server may run on while the quota's
    budget lasts (its pinned cores); `cores` is then the quota."""
    quota_period: float | None = None
    """Under a CPU quota: the quota's period, seconds."""


def _number(value: Any, *keys: str) -> float | None:
    """A number, or a number inside a stats dict (httperf prints min/avg/max)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        for key in keys:
            if key in value:
                return _number(value[key], *keys)
    return None


def _find_fields(doc: dict) -> dict | None:
    """The dict that holds request_rate & co.: the trial itself or one level down
    (bench may nest httperf's fields under a key such as `httperf`)."""
    wanted = ("request_rate", "reply_rate", "reply_time_ms")
    if all(k in doc for k in wanted):
        return doc
    for value in doc.values():
        if isinstance(value, dict) and all(k in value for k in wanted):
            return value
    return None


def _trial_is_invalid(doc: dict) -> str | None:
    """bench marks runs where the load generator, not the server, was the
    limit; such a point says nothing about the server."""
    if doc.get("valid") is False:
        return str(doc.get("invalid_reason") or "marked invalid")
    verdict = doc.get("verdict")
    if isinstance(verdict, dict) and str(verdict.get("label", "")).replace("_", "-") == "client-bound":
        return "verdict client-bound"
    return None


def _reply_time_seconds(value: Any) -> float | None:
    # httperf's "Reply time [ms]: response R transfer T": the model's response
    # time runs until the reply is fully received, so it is R + T.
    if isinstance(value, dict):
        if "response" in value:
            total = _number(value["response"])
            transfer = _number(value.get("transfer", 0.0))
            if total is None or transfer is None:
                return None
            return (total + transfer) / 1000.0
        ms = _number(value, "total", "avg", "mean")
        return None if ms is None else ms / 1000.0
    ms = _number(value)
    return None if ms is None else ms / 1000.0


def _trials(data: Any) -> list[dict]:
    if isinstance(data, list):
        return [d for d in data if isinstance(d, dict)]
    if isinstance(data, dict):
        for key in ("trials", "results", "points", "steps"):
            if isinstance(data.get(key), list):
                return [d for d in data[key] if isinstance(d, dict)]
        return [data]
    return []


def read_bench_json(text: str, path: str) -> tuple[list[Observation], list[str]]:
    """Observations from bench output; returns (observations, skipped-trial notes)."""
    try:
        documents = [json.loads(text)]
    except json.JSONDecodeError as first_error:
        # JSON Lines: one trial document per line.
        documents = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                documents.append(json.loads(line))
            except json.JSONDecodeError:
                raise AdvisorError(
                    f"not valid JSON ({first_error.msg} at line {first_error.lineno})",
                    path, first_error.lineno,
                    "give the JSON `apache-advisor bench --format json` writes, or a CSV",
                ) from None
    observations: list[Observation] = []
    skipped: list[str] = []
    trials = [t for doc in documents for t in _trials(doc)]
    for index, trial in enumerate(trials, 1):
        where = f"{path} trial {index}"
        reason = _trial_is_invalid(trial)
        if reason:
            skipped.append(f"{where}: {reason}")
            continue
        fields = _find_fields(trial)
        if fields is None:
            raise AdvisorError(
                f"trial {index} lacks request_rate, reply_rate or reply_time_ms", path, None,
                "each trial needs the httperf fields bench writes",
            )
        rate = _number(fields["request_rate"], "avg", "mean")
        throughput = _number(fields["reply_rate"], "avg", "mean")
        response = _reply_time_seconds(fields["reply_time_ms"])
        if rate is None or throughput is None or response is None:
            raise AdvisorError(
                f"trial {index}: request_rate, reply_rate and reply_time_ms must be numbers",
                path, None, "check the file is bench output",
            )
        observation = Observation(rate, response, throughput, where)
        _bench_extras(trial, observation)
        observations.append(observation)
    return observations, skipped


def _middle(values: list[float]) -> float | None:
    """Mean of the per-second samples without the first and last (start-up, drain)."""
    inner = values[1:-1] if len(values) > 2 else values
    return sum(inner) / len(inner) if inner else None


def _bench_extras(trial: dict, obs: Observation) -> None:
    """Fill what bench measures beside httperf: offered rate, share unanswered,
    pool size, cores, busy workers and CPU (all optional)."""
    inputs = trial.get("inputs") if isinstance(trial.get("inputs"), dict) else {}
    httperf = trial.get("httperf") if isinstance(trial.get("httperf"), dict) else {}
    rate, duration = _number(inputs.get("rate")), _number(inputs.get("duration_s"))
    calls = _number(inputs.get("num_calls")) or 1.0
    if rate and duration and not inputs.get("wsess"):
        # The offered rate is what the trial asked for; httperf's request rate
        # counts only connections that got through to send a request.
        obs.rate = rate * calls
        replies = _number(httperf.get("replies"))
        if replies is not None:
            asked = max(1.0, round(rate * duration)) * calls
            obs.turned_away = min(max(1.0 - replies / asked, 0.0), 1.0)
        timeout = _number(inputs.get("timeout_s"))
        if calls == 1 and timeout and not inputs.get("session_log"):
            obs.duration, obs.timeout = duration, timeout
    pool = trial.get("pool") if isinstance(trial.get("pool"), dict) else {}
    configured = _number(pool.get("configured"))
    if configured is None:
        for directive in inputs.get("directives") or []:
            name, _, value = str(directive).partition(" ")
            if name.lower() in ("maxrequestworkers", "maxclients") and value.strip().isdigit():
                configured = float(value)
    obs.workers = int(configured) if configured else None
    for directive in inputs.get("directives") or []:
        name, _, value = str(directive).strip().partition(" ")
        if name.lower() == "listenbacklog" and value.strip().isdigit():
            obs.listen_backlog = int(value.strip())
    quota = _number(inputs.get("server_cpu_quota_pct"))
    cpus = inputs.get("server_cpus")
    if quota:
        obs.cores = quota / 100.0
        obs.burst_cores = float(len(cpus)) if isinstance(cpus, list) and cpus else None
        # bench before the period was recorded ran the sandbox's 10 ms one.
        obs.quota_period = (_number(inputs.get("server_cpu_period_ms")) or SANDBOX_QUOTA_PERIOD_MS) / 1000.0
    elif isinstance(cpus, list) and cpus:
        obs.cores = float(len(cpus))
    samples = [s for s in trial.get("metrics") or [] if isinstance(s, dict)]
    busy = [float(s["busy_workers"]) for s in samples if isinstance(s.get("busy_workers"), (int, float))]
    if busy:
        # The collector's own status request holds one worker while it is read.
        obs.busy_workers = max((_middle(busy) or 0.0) - 1.0, 0.0)
    cpu = [float(s["httpd_cpu_pct"]) for s in samples if isinstance(s.get("httpd_cpu_pct"), (int, float))]
    if cpu:
        obs.cpu_cores = (_middle(cpu) or 0.0) / 100.0


SANDBOX_QUOTA_PERIOD_MS = 10.0

CSV_COLUMNS = ("rate", "response_time", "throughput")


def read_csv(text: str, path: str) -> list[Observation]:
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    reader.fieldnames = header
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise AdvisorError(
            f"CSV header lacks {', '.join(missing)}", path, 1,
            "the first line must name the columns rate,response_time,throughput",
        )
    observations = []
    for row in reader:
        line = reader.line_num
        if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue
        try:
            values = [float((row[c] or "").strip()) for c in CSV_COLUMNS]
        except ValueError:
            raise AdvisorError(
                "rate, response_time and throughput must be numbers", path, line,
                "response_time in seconds, rate and throughput in requests/s",
            ) from None
        observations.append(Observation(values[0], values[1], values[2], f"{path}:{line}"))
    return observations


def read_measurements(paths: Iterable[str]) -> tuple[list[Observation], list[str]]:
    observations: list[Observation] = []
    skipped: list[str] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as error:
            raise AdvisorError(f"cannot read the measurements: {error.strerror}", path, None,
                               "give bench JSON or a CSV file") from None
        except UnicodeDecodeError:
            raise AdvisorError("the measurements are not UTF-8 text", path, None,
                               "give bench JSON or a CSV file") from None
        stripped = text.lstrip()
        if stripped.startswith(("{", "[")):
            found, skip = read_bench_json(text, path)
            skipped.extend(skip)
        else:
            found = read_csv(text, path)
        for obs in found:
            if not (obs.rate > 0 and obs.response_time > 0 and obs.throughput > 0) or not all(
                math.isfinite(v) for v in (obs.rate, obs.response_time, obs.throughput)
            ):
                raise AdvisorError(
                    f"{obs.source}: rate, response time and throughput must be finite and > 0",
                    path, None, "drop trials where nothing was served",
                )
        observations.extend(found)
    return observations, skipped
