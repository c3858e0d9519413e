"""The results schema: the one place that says what a benchlab result is.

Everything that stores, exports or reports results reads these frozen dataclasses, and every
result written anywhere (store, JSON directory, export) carries ``schema_version``.

History of ``SCHEMA_VERSION``:

1. First version: identity, status, raw samples, per-metric summaries, environment, error text.
2. A summary names its ``processes`` and keeps each one's median (``process_p50s``); with two
   or more processes ``ci_low``/``ci_high`` predict the next identical run (the process as the
   unit, :mod:`benchlab.stats.runstats`) instead of bounding the pooled iterations' median.
   Version-1 results read as before: one process, the old interval.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

# The names of a result's details and environment facts live beside it, in schema/keys.py;
# named here too, as every layer has always read them from here.
from benchlab.schema.keys import DetailKey, EnvKey

__all__ = [
    "LATENCY_KEY",
    "SCHEMA_VERSION",
    "DetailKey",
    "EnvKey",
    "JobIdentity",
    "Metric",
    "Result",
    "Sample",
    "Status",
    "StopReason",
    "Summary",
    "device_label",
    "group_samples",
    "metric_key",
]

SCHEMA_VERSION = 2


class Status(StrEnum):
    """How a job ended."""

    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    USER_ERROR = "user_error"


class StopReason(StrEnum):
    """Why a measuring loop stopped, inside one process (``details.stop_reason``) or over a
    job's fresh processes (``details.job_stop_reason``); results hold the plain strings."""

    TARGET_CI_REACHED = "target_ci_reached"
    TIME_BUDGET_EXHAUSTED = "time_budget_exhausted"
    MAX_ITERATIONS = "max_iterations"
    FIXED_ITERATIONS = "fixed_iterations"
    #: The job ran the fresh processes its test asked for, with no target CI.
    FIXED_REPETITIONS = "fixed_repetitions"
    #: A target CI was asked for, but the processes printed no latency to judge it by.
    NO_LATENCY_SAMPLES = "no_latency_samples"
    #: Raced (:mod:`benchlab.stats.race`): the interval reached the goal and the "× fastest" ratio
    #: is decided or a tie.
    DECIDED = "decided"
    #: Raced: slower than the contest's fastest by more than the race's margin, beyond doubt.
    CLEARLY_SLOWER = "clearly_slower"
    #: Raced: the most processes a cell gets, the answer still open.
    PROCESS_CAP = "process_cap"
    #: Raced: the contest spent the processes it may, the answer still open.
    RACE_BUDGET = "race_budget"
    #: Raced: the "× fastest" ratio is settled, and the spread between this machine's
    #: processes keeps the interval wider than the goal even at the most processes a cell
    #: gets: the narrowest interval the budget can buy is said instead of chased.
    MACHINE_FLOOR = "machine_floor"


@dataclass(frozen=True, slots=True)
class Sample:
    """One measured value of one metric.

    ``type`` is ``NET`` for the whole model or an operator's name; ``repetition`` is the fresh
    process the value came from and ``index`` its order among that process's values of the same
    ``type``/``metric``.
    """

    metric: str
    value: float
    unit: str
    type: str = "NET"
    repetition: int = 0
    index: int = 0

    @property
    def key(self) -> str:
        """The metric key this sample belongs to, e.g. ``NET latency``."""
        return metric_key(self.type, self.metric)


def metric_key(type_: str, metric: str) -> str:
    """The key that groups samples of one operator (or ``NET``) and one metric."""
    return f"{type_} {metric}"


class Metric(StrEnum):
    """The whole-model (``NET``) metrics that runners and output parsers write and reports read.

    A sample's ``metric`` is one of these (or an operator's own metric); :attr:`key` is its key
    among a result's summaries. Units travel with each sample.
    """

    #: ms per inference, the metric every report leads with; in a generative test, one whole
    #: generation end to end (prompt handed over → last new token chosen)
    LATENCY = "latency"
    FIRST_INFERENCE = "first_inference"  #: ms, the first call after loading
    #: ms of CPU time (every thread of the process) per inference, beside its wall latency:
    #: time the machine stole from the process (other tenants, steal time) does not count
    CPU_TIME = "cpu_time"
    LOAD_TIME = "load_time"  #: ms to load the model
    IMPORT_TIME = "import_time"  #: ms to import the runtime (the runner's backend)
    COMPILE_TIME = "compile_time"  #: ms a compiling runtime spent before the first call
    MEMORY_LOAD = "memory_load"  #: MiB the process grew by loading the model
    MEMORY_PEAK = "memory_peak"  #: MiB, the process's peak resident memory
    MODEL_SIZE = "model_size"  #: MiB, the model file(s)
    #: MiB, the runtime's code the process loaded (runner/codesize.py), or a native tool's
    #: binary and the libraries pushed with it
    CODE_SIZE = "code_size"
    ENERGY_PER_INFERENCE = "energy_per_inference"  #: mJ per inference, from a power meter
    POWER = "power"  #: W, average power while the model ran (a tool's, or a power meter's)
    ERROR_MAX_ABS = "error_max_abs"  #: largest absolute error against the reference outputs
    ERROR_MEAN_ABS = "error_mean_abs"  #: mean absolute error against the reference outputs
    ERROR_MAX_REL = "error_max_rel"  #: largest relative error against the reference outputs
    ERROR_L2 = "error_l2"  #: L2 norm of (outputs - reference)
    ERROR_L2_REL = "error_l2_rel"  #: that norm over the reference's L2 norm
    CROSS_ENTROPY = "cross_entropy"  #: nats, of the outputs' classes against the reference's
    KL_DIVERGENCE = "kl_divergence"  #: nats, KL(reference classes || output classes)
    SQNR = "sqnr"  #: dB, signal-to-quantization-noise ratio against the reference outputs
    COSINE_SIMILARITY = "cosine_similarity"  #: of the outputs and the reference outputs
    TOP1_AGREEMENT = "top1_agreement"  #: share of inputs whose top class matches the reference
    TOP5_AGREEMENT = "top5_agreement"  #: share of inputs whose top 5 classes match the reference
    #: dB, what the quantization recipe costs: its simulated (fake-quantized) outputs against
    #: the fp32 reference, as SQNR (docs/accuracy.md, "The int8 error, split")
    QUANTIZATION_SQNR = "quantization_sqnr"
    #: ‖simulated − fp32 reference‖₂ over ‖fp32 reference‖₂
    QUANTIZATION_L2_REL = "quantization_l2_rel"
    #: dB, what the runtime's kernels add: its outputs against the simulated ones (signal: the
    #: fp32 reference, so the two parts share one scale)
    LOWERING_SQNR = "lowering_sqnr"
    #: ‖runtime − simulated‖₂ over ‖fp32 reference‖₂; with the quantization part it brackets
    #: error_l2_rel (the error vectors add up)
    LOWERING_L2_REL = "lowering_l2_rel"
    #: dB, the rounding floor under the lowering error: the runtime's own outputs moved by a
    #: one-ulp change of every float input, against its unmoved outputs (signal: the fp32
    #: reference). A lowering error near it is rounding flips spreading through a deep int8
    #: net, not a kernel that computes something else (docs/accuracy.md)
    LOWERING_FLOOR_SQNR = "lowering_floor_sqnr"
    #: ‖runtime(x nudged one ulp) − runtime(x)‖₂ over ‖fp32 reference‖₂
    LOWERING_FLOOR_L2_REL = "lowering_floor_l2_rel"
    # Generation (docs/generative.md has each definition; load time is never inside any of them)
    #: ms from the prompt handed to the model to its first new token: the prefill of the prompt
    #: (at the test's context depth) and the choice of that token
    #: instructions the process executed inside one measured call (counting mode: valgrind
    #: counts them, docs/statistics.md "Counted instructions")
    INSTRUCTIONS = "instructions"
    L1D_MISSES = "l1d_misses"  #: simulated first-level data cache misses in one counted call
    LL_MISSES = "ll_misses"  #: simulated last-level cache misses in one counted call
    TTFT = "ttft"
    #: ms per output token after the first: (generation latency − TTFT) / (new tokens − 1),
    #: one sample per generation
    TPOT = "tpot"
    #: ms between two consecutive new tokens, every gap of every generation (its p50/p90/p99
    #: are the inter-token latency distribution; its mean over one generation is the TPOT)
    INTER_TOKEN_LATENCY = "inter_token_latency"
    PREFILL_RATE = "prefill_rate"  #: tokens/s, prompt tokens over TTFT
    DECODE_RATE = "decode_rate"  #: tokens/s, new tokens after the first over their time
    #: share of the first greedy tokens equal to the PyTorch eager reference's, on the
    #: reference prompt (1.0: the same text)
    TOKEN_AGREEMENT = "token_agreement"
    #: the first position (0-based, in new tokens) where the greedy tokens part from the
    #: reference's; the number compared when they never do
    FIRST_DIVERGENCE = "first_divergence"
    #: perplexity of the reference text under the model (exp of the mean next-token cross
    #: entropy): equal across runtimes that compute the same model
    PERPLEXITY = "perplexity"
    # Load scenarios (MLPerf LoadGen; docs/scenarios.md has each definition)
    #: ms, the scenario's percentile latency as LoadGen computes it: the 90th of single-stream
    #: queries, the 99th of multi-stream queries (all their samples done), the 99th of server
    #: queries (arrival to completion, queueing included)
    SCENARIO_LATENCY = "scenario_latency"
    #: ms, LoadGen's early-stopping estimate of that percentile: a bound that holds at 99%
    #: confidence for the number of queries run (absent where it cannot make one)
    EARLY_STOPPING_LATENCY = "early_stopping_latency"
    #: samples/s LoadGen completed (offline: the scenario's result)
    THROUGHPUT = "throughput"
    #: queries/s of a server run: the highest rate whose p99 met the latency bound (searched),
    #: or the rate asked for
    SERVER_QPS = "server_qps"
    #: 1 when LoadGen judged the run valid (durations, query counts, early stopping, the
    #: bound), else 0; the details say why not
    SCENARIO_VALID = "scenario_valid"
    # A generative test under load (LoadGen's token latencies)
    #: ms, the 99th percentile of the time to first token LoadGen measured, arrival to first
    #: token (queueing included)
    SCENARIO_TTFT = "scenario_ttft"
    #: ms, the 99th percentile of the time per output token LoadGen measured (a query's time
    #: after its first token over its tokens after the first)
    SCENARIO_TPOT = "scenario_tpot"
    #: tokens/s LoadGen completed
    TOKEN_THROUGHPUT = "token_throughput"
    #: queries/s that met every token bound (TTFT and TPOT, as benchlab timed each query),
    #: over the run: vLLM's goodput
    GOODPUT = "goodput"

    @property
    def key(self) -> str:
        """The summary key of this whole-model metric, e.g. ``NET latency``."""
        return metric_key("NET", self.value)


#: The key of the whole model's latency per inference, the metric every report leads with.
LATENCY_KEY = Metric.LATENCY.key


@dataclass(frozen=True, slots=True)
class Summary:
    """Summary statistics of one metric, recomputable from its samples.

    With two or more processes, ``ci_low``/``ci_high`` are where the median of the next
    identical run is expected at ``ci_level``: the process is the unit, so the interval widens
    when processes disagree (:func:`benchlab.stats.runstats.next_run_interval`, never narrower than
    the pooled iterations' interval). With one process they bound this process's median
    (distribution-free, from order statistics) and say nothing about the next run.
    ``process_p50s`` holds each process's median, in process order; ``warnings`` say why the
    numbers may not be trusted; ``percentiles`` holds any extra ``pN`` a test asked for.
    """

    unit: str
    count: int
    mean: float
    stdev: float
    min: float
    p10: float
    p50: float
    p90: float
    p99: float
    max: float
    mad: float
    cv: float
    ci_low: float
    ci_high: float
    ci_level: float = 0.95
    warnings: tuple[str, ...] = ()
    percentiles: Mapping[str, float] = field(default_factory=dict)
    processes: int = 1
    process_p50s: tuple[float, ...] = ()

    @property
    def predicts_next_run(self) -> bool:
        """True when the interval rests on two or more processes (it predicts the next run)."""
        return self.processes >= 2

    @property
    def ci_rel_halfwidth(self) -> float:
        """Half the median's CI width relative to the median (0.01 = ±1%)."""
        if self.p50 == 0:
            return float("inf") if self.ci_high != self.ci_low else 0.0
        return (self.ci_high - self.ci_low) / 2.0 / abs(self.p50)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        data = asdict(self)
        data["warnings"] = list(self.warnings)
        data["percentiles"] = dict(self.percentiles)
        data["process_p50s"] = list(self.process_p50s)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Summary:
        """Inverse of :meth:`to_dict`."""
        values = dict(data)
        values["warnings"] = tuple(values.get("warnings", ()))
        values["percentiles"] = dict(values.get("percentiles", {}))
        values["process_p50s"] = tuple(values.get("process_p50s", ()))
        return cls(**values)


def device_label(target: str, device: str) -> str:
    """A device as reports name it: the target kind and the device's hostname."""
    return f"{target}:{device}" if device else target


@dataclass(frozen=True, slots=True)
class JobIdentity:
    """What was measured, where and how: everything that makes two jobs the same job.

    ``key`` is a stable hash of these fields; ``run --resume`` uses it to skip finished jobs.
    """

    spec: str
    model_name: str
    model_hash: str
    test_identifier: str
    framework: str
    framework_config: Mapping[str, Any]
    target: str
    device: str = ""
    variant: str = "plain"

    @property
    def key(self) -> str:
        """A 16-hex-digit digest of the identity, stable across processes and machines."""
        payload = json.dumps(self.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @property
    def device_label(self) -> str:
        """Which device: ``adb:Pixel_8-SERIAL``, ``ssh:pi``, ``host:build-01`` (the kind of
        target and the device's hostname), how reports name a device."""
        return device_label(self.target, self.device)

    @property
    def label(self) -> str:
        """A short human label: ``model/test @ framework[config]``."""
        config = ",".join(f"{k}={v}" for k, v in sorted(self.framework_config.items()))
        suffix = f"[{config}]" if config else ""
        return f"{self.model_name}/{self.test_identifier} @ {self.framework}{suffix}"

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        data = asdict(self)
        data["framework_config"] = dict(self.framework_config)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobIdentity:
        """Inverse of :meth:`to_dict`."""
        return cls(**dict(data))


@dataclass(frozen=True, slots=True)
class Result:
    """Everything one job produced.

    Raw ``samples`` are always kept; ``summaries`` maps a metric key (``NET latency``,
    ``conv1 latency``) to its :class:`Summary`. ``details`` carries job-level facts that are
    not samples: the runtime version, why an adaptive run stopped, the number of fresh processes.
    """

    identity: JobIdentity
    status: Status
    samples: tuple[Sample, ...] = ()
    summaries: Mapping[str, Summary] = field(default_factory=dict)
    environment: Mapping[str, Any] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    stderr_tail: str | None = None
    started_at: str = ""
    finished_at: str = ""
    schema_version: int = SCHEMA_VERSION

    @property
    def ok(self) -> bool:
        """True when the job finished and produced its measurements."""
        return self.status is Status.OK

    @property
    def stop_reason(self) -> StopReason | None:
        """Why the job stopped starting fresh processes (``None`` in results that do not say)."""
        raw = self.details.get(DetailKey.JOB_STOP_REASON)
        return StopReason(raw) if raw in StopReason._value2member_map_ else None

    @property
    def repetitions(self) -> int:
        """The fresh processes that finished."""
        return int(self.details.get(DetailKey.REPETITIONS) or 0)

    @property
    def device_flags(self) -> tuple[Mapping[str, Any], ...]:
        """Device conditions during the job that make its numbers doubtful."""
        return tuple(self.details.get(DetailKey.DEVICE_FLAGS) or ())

    @property
    def runtime_version(self) -> str | None:
        """The runtime's version as the runner reported it."""
        raw = self.details.get(DetailKey.RUNTIME_VERSION)
        return None if raw is None else str(raw)

    @property
    def model_info(self) -> Mapping[str, Any]:
        """What was known about the model before running (the zoo's task, size, FLOPs...)."""
        info = self.details.get(DetailKey.MODEL_INFO)
        return info if isinstance(info, Mapping) else {}

    @property
    def energy(self) -> Mapping[str, Any] | None:
        """The power meter's account of the job, when energy was measured."""
        energy = self.details.get(DetailKey.ENERGY)
        return energy if isinstance(energy, Mapping) else None

    def samples_of(self, key: str) -> list[float]:
        """The values of one metric key, in repetition then iteration order."""
        return [s.value for s in self.samples if s.key == key]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, including ``schema_version``."""
        return {
            "schema_version": self.schema_version,
            "identity": self.identity.to_dict(),
            "job_key": self.identity.key,
            "status": self.status.value,
            "error": self.error,
            "stderr_tail": self.stderr_tail,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "environment": dict(self.environment),
            "details": dict(self.details),
            "summaries": {k: v.to_dict() for k, v in self.summaries.items()},
            "samples": [asdict(s) for s in self.samples],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Result:
        """Inverse of :meth:`to_dict`; rejects results written by a newer schema."""
        version = int(data.get("schema_version", 1))
        if version > SCHEMA_VERSION:
            raise ValueError(
                f"result has schema_version {version}; this benchlab reads up to {SCHEMA_VERSION}"
            )
        return cls(
            identity=JobIdentity.from_dict(data["identity"]),
            status=Status(data["status"]),
            samples=tuple(Sample(**s) for s in data.get("samples", ())),
            summaries={k: Summary.from_dict(v) for k, v in data.get("summaries", {}).items()},
            environment=dict(data.get("environment", {})),
            details=dict(data.get("details", {})),
            error=data.get("error"),
            stderr_tail=data.get("stderr_tail"),
            started_at=data.get("started_at", ""),
            finished_at=data.get("finished_at", ""),
            schema_version=version,
        )


def group_samples(samples: Iterable[Sample]) -> dict[str, list[Sample]]:
    """Samples grouped by metric key, keeping their order."""
    groups: dict[str, list[Sample]] = {}
    for sample in samples:
        groups.setdefault(sample.key, []).append(sample)
    return groups
