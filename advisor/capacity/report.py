"""Put the memory sum and the queueing model together into one result.

Pure: the command gathers the inputs (config, measurements, flags) and the
formatters print what comes out. Nothing here reads files or prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.capacity.fit_queueing import FitResult
from advisor.capacity.fit_workerpool import PoolFit
from advisor.capacity.protocol_mix import MixSettings, ProtocolMix, build_mix
from advisor.capacity.queueing_model import (
    Arrivals,
    Curve,
    Prediction,
    Service,
    SimulationOptions,
    curve_rates,
    predict_many,
)
from advisor.capacity.sizing import (
    MemoryInputs,
    MpmSettings,
    Recommendation,
    SumLine,
    format_size,
    memory_at,
    recommend,
)
from advisor.capacity.workerpool_model import ServerModel, predict_pool

MPMS = ("prefork", "worker", "event")
# Rates shown when the admin names none: light, busy, at and past capacity.
DEFAULT_LOAD_FACTORS = (0.5, 0.8, 0.95, 1.2, 2.0)
# A worst-case wait beyond which a bigger pool only makes overload slower.
LONG_WAIT_SECONDS = 10.0


@dataclass
class CapacityRequest:
    config_file: str
    settings: MpmSettings
    """The pool the config runs (after httpd's corrections and --max-workers)."""
    memory: MemoryInputs
    threaded_threads_per_child: int
    threaded_thread_limit: int
    async_factor: float
    rates: list[float] = field(default_factory=list)
    service_time: float | None = None
    service_time_source: str = ""
    fit: FitResult | PoolFit | None = None
    pool_model: ServerModel | None = None
    """The worker-pool model (from --fit): predictions use it, with c =
    MaxRequestWorkers workers and its listen queue, instead of K."""
    fit_max_request_workers: int | None = None
    """MaxRequestWorkers of the server the fit's trials ran against (the
    config's own, before any --max-workers what-if)."""
    arrivals: Arrivals = field(default_factory=Arrivals)
    service: Service = field(default_factory=Service)
    simulation: SimulationOptions | None = None
    target_response: float | None = None
    """Worst-case response time the admin accepts (s): caps K at target / x."""
    curve_points: int = 0
    """> 0: also compute curves for a plot."""
    notes: list[str] = field(default_factory=list)
    protocol_mix: MixSettings | None = None
    """HTTP/1.1 and HTTP/2 visitors (issue 57); None: not modelled."""


@dataclass
class PredictionRow:
    rate: float
    current: Prediction
    recommended: Prediction


@dataclass
class ModelSummary:
    service_time: float
    service_time_source: str
    capacity: float
    k_current: int
    k_recommended: int
    queue_offset: int
    """K minus MaxRequestWorkers: what the listen queue adds (from a fit), else 0."""
    arrivals: str
    service: str
    worst_response_current: float
    worst_response_recommended: float
    regime: str = ""
    """Pool model: CPU-bound, wait-bound or mixed."""
    listen_queue: int = 0
    """Pool model: connections the listen queue holds beyond the workers."""


@dataclass
class CapacityReport:
    config_file: str
    settings: MpmSettings
    memory: MemoryInputs
    current_total: int
    current_lines: list[SumLine]
    recommendations: dict[str, Recommendation]
    applies_to: str
    model: ModelSummary | None
    fit: FitResult | None
    predictions: list[PredictionRow]
    curves: list[Curve]
    notes: list[str]
    fit_curves: list[Curve] = field(default_factory=list)
    """Pool fit: the model at each pool size the trials ran with (for the plot)."""
    fpm_predictions: list = field(default_factory=list)
    """advisor.capacity.fpm_model.SeriesPrediction per php-fpm pool and rate, with the pool's name."""
    protocol_mix: ProtocolMix | None = None

    @property
    def recommended(self) -> Recommendation:
        return self.recommendations[self.applies_to]

    @property
    def current_fits(self) -> bool:
        return self.current_total <= self.memory.ram.bytes

    def json_extra(self) -> dict:
        return {"current_fits": self.current_fits, "recommended_max_request_workers":
                self.recommended.max_request_workers}


def default_rates(service_time: float) -> list[float]:
    capacity = 1.0 / service_time
    return [float(f"{factor * capacity:.3g}") for factor in DEFAULT_LOAD_FACTORS]


def build_report(request: CapacityRequest) -> CapacityReport:
    settings = request.settings
    x = request.service_time
    offset = _queue_offset(request)
    cap = None
    cap_reason = ""
    if request.target_response is not None and x is not None:
        # Saturated PS holds K jobs and completes 1/x per second, so by
        # Little's law a request then spends K x in the server: the bound
        # MaxClients puts on the worst case (Andersson et al. 2003, IV).
        cap = max(int(request.target_response / x) - offset, 1)
        cap_reason = f"the {request.target_response:g} s response-time target"
    recommendations = {
        mpm: recommend(
            request.memory,
            mpm,
            request.threaded_threads_per_child,
            request.async_factor,
            request.threaded_thread_limit,
            cap,
            cap_reason,
        )
        for mpm in MPMS
    }
    applies_to = settings.mpm if settings.mpm in MPMS else "event"
    rec = recommendations[applies_to]
    current_total, current_lines = memory_at(request.memory, settings)
    notes = list(request.notes) + list(settings.notes)
    if current_total > request.memory.ram.bytes:
        notes.append(
            f"MaxRequestWorkers {settings.max_request_workers} needs {format_size(current_total)}, "
            f"more than the {format_size(request.memory.ram.bytes)} of RAM: under a peak the host "
            f"swaps (Kegel 1997: the whole machine became unresponsive)"
        )

    model = None
    predictions: list[PredictionRow] = []
    curves: list[Curve] = []
    x = request.service_time
    fit_curves: list[Curve] = []
    if request.pool_model is not None:
        model, predictions, curves, fit_curves = _pool_predictions(request, settings, rec, notes)
    elif x is not None:
        k_now = max(1, settings.max_request_workers + offset)
        k_rec = max(1, rec.max_request_workers + offset)
        model = ModelSummary(
            service_time=x,
            service_time_source=request.service_time_source,
            capacity=1.0 / x,
            k_current=k_now,
            k_recommended=k_rec,
            queue_offset=offset,
            arrivals=request.arrivals.describe(),
            service=request.service.describe(),
            worst_response_current=k_now * x,
            worst_response_recommended=k_rec * x,
        )
        if request.target_response is None and k_rec * x > max(LONG_WAIT_SECONDS, 2 * k_now * x):
            notes.append(
                f"the recommended pool lets a request wait up to {k_rec * x:.0f} s in overload "
                f"(K x service time) for no gain in throughput; RAM is not the limit that matters: "
                f"cap it with --target-response SECONDS"
            )
        rates = request.rates or default_rates(x)
        now = predict_many(rates, x, k_now, request.arrivals, request.service, request.simulation)
        later = predict_many(rates, x, k_rec, request.arrivals, request.service, request.simulation)
        predictions = [PredictionRow(r, a, b) for r, a, b in zip(rates, now, later)]
        if request.curve_points:
            grid = curve_rates(x, rates, request.curve_points)
            for k, label in _curve_labels(settings, rec, k_now, k_rec):
                points = predict_many(grid, x, k, request.arrivals, request.service, request.simulation)
                curves.append(Curve(k, label, points))
    mix = None
    if request.protocol_mix is not None:
        mix = build_mix(request.protocol_mix, model.service_time if model is not None else None,
                        [row.rate for row in predictions], settings.max_request_workers)
    return CapacityReport(
        config_file=request.config_file,
        settings=settings,
        memory=request.memory,
        current_total=current_total,
        current_lines=current_lines,
        recommendations=recommendations,
        applies_to=applies_to,
        model=model,
        fit=request.fit,
        predictions=predictions,
        curves=curves,
        notes=notes,
        fit_curves=fit_curves,
        protocol_mix=mix,
    )


def _pool_predictions(request: CapacityRequest, settings: MpmSettings, rec: Recommendation, notes: list[str]):
    """Predictions of the worker-pool model for the current and recommended pools."""
    pm = request.pool_model
    c_now, c_rec = settings.max_request_workers, rec.max_request_workers
    cap_now = pm.capacity(c_now)
    hold = pm.hold_time
    # Saturated, the server holds c + b requests and completes cap per second.
    worst_now = (c_now + pm.backlog) / cap_now
    worst_rec = (c_rec + pm.backlog) / pm.capacity(c_rec)
    model = ModelSummary(
        service_time=hold, service_time_source=request.service_time_source, capacity=cap_now,
        k_current=c_now + pm.backlog, k_recommended=c_rec + pm.backlog, queue_offset=pm.backlog,
        arrivals=request.arrivals.describe(), service="any (exact for Poisson arrivals)",
        worst_response_current=worst_now, worst_response_recommended=worst_rec,
        regime=pm.regime(c_now), listen_queue=pm.backlog,
    )
    if pm.capacity(c_rec) < 1.05 * cap_now and c_rec > c_now:
        notes.append(f"the server is {pm.regime(c_now)}: more workers add little throughput "
                     f"({cap_now:.3g} -> {pm.capacity(c_rec):.3g} req/s); the CPU is the limit")
    rates = request.rates or [float(f"{f * cap_now:.3g}") for f in DEFAULT_LOAD_FACTORS]
    now = predict_pool(rates, pm, c_now, request.arrivals)
    later = predict_pool(rates, pm, c_rec, request.arrivals)
    predictions = [PredictionRow(r, a, b) for r, a, b in zip(rates, now, later)]
    curves: list[Curve] = []
    fit_curves: list[Curve] = []
    if request.curve_points:
        top = max([2.5 * cap_now] + [1.15 * r for r in rates])
        grid = sorted({top * (i + 1) / request.curve_points for i in range(request.curve_points)} | set(rates))
        for c, label in _curve_labels(settings, rec, c_now + pm.backlog, c_rec + pm.backlog):
            workers = c - pm.backlog
            curves.append(Curve(c, label, predict_pool(grid, pm, workers, request.arrivals)))
        fit = request.fit
        if isinstance(fit, PoolFit):
            from advisor.capacity.fit_workerpool import fit_curve

            rows = fit.comparisons + fit.held_out
            sizes = sorted({row.workers for row in rows})
            top_fit = 1.2 * max(row.rate for row in rows)
            fit_grid = [top_fit * (i + 1) / request.curve_points for i in range(request.curve_points)]
            for c in sizes:
                fit_curves.append(Curve(c, f"model, {c} workers", fit_curve(fit, fit_grid, c)))
    return model, predictions, curves, fit_curves


def _queue_offset(request: CapacityRequest) -> int:
    """K minus MaxRequestWorkers, from a fit; 0 without one.

    The fitted K counts the requests the kernel holds in the listen queue
    too: Andersson et al. (2003, Table 2) found K = 208 and 286 for MaxClients
    75 and 150, about +135 either way. The same margin carries over to
    another pool size.
    """
    fit = request.fit
    if not isinstance(fit, FitResult) or not fit.k_identified or not request.fit_max_request_workers:
        return 0
    return fit.k - request.fit_max_request_workers


def _curve_labels(settings: MpmSettings, rec: Recommendation, k_now: int, k_rec: int):
    now = f"MaxRequestWorkers {settings.max_request_workers}\n(now)"
    later = f"MaxRequestWorkers {rec.max_request_workers}\n(recommended)"
    if k_now != settings.max_request_workers:
        now += f", K = {k_now}"
        later += f", K = {k_rec}"
    if k_now == k_rec:
        return [(k_now, f"MaxRequestWorkers {settings.max_request_workers}\n(now = recommended)")]
    return [(k_now, now), (k_rec, later)]
