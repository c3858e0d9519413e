"""What each whole-model metric is: one registry, read by the runners, ``compare``, every table
and the lab's pages.

A :class:`MetricInfo` per :class:`~benchlab.schema.result.Metric` says the unit runners print it in,
which way is better, its family, whether ``compare`` decides on it, and how a table labels
and formats it. The runners' unit tables, ``compare``'s decided metrics, the matrix's column
units and the lab's grouping of a run's metrics are all read from here, so adding a metric is
one entry (docs/architecture.md, "Where to add things"); ``tests/schema/test_metrics.py`` fails while
a member of :class:`Metric` has none. Stdlib and :mod:`benchlab.schema.result` only: runner processes
import it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Literal

from benchlab.schema.result import Metric

__all__ = ["METRICS", "Family", "MetricInfo", "decided_metrics", "metric_info", "milliseconds",
           "units_of"]


class Family(StrEnum):
    """The kinds of metric a report groups together."""

    LATENCY = "latency"  #: time per inference, and its CPU time
    STARTUP = "startup"  #: import, load, compile and the first call
    MEMORY = "memory"
    SIZE = "size"
    ENERGY = "energy"
    ACCURACY = "accuracy"  #: against the reference outputs
    GENERATIVE = "generative"  #: text generation: speed and agreement with the reference
    SCENARIO = "scenario"  #: MLPerf LoadGen's figures of a load scenario
    COUNTED = "counted"  #: executed instructions and simulated cache misses (counting mode)


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """One metric's facts. ``better`` is ``lower``, ``higher`` or ``None`` (neither: a
    reference level, a verdict); ``decided``: ``compare`` decides on it when present.
    ``label`` heads its table column (unit included); ``fmt`` formats its value there: a
    format spec, or a function for a metric whose digits depend on its size."""

    metric: Metric
    unit: str
    family: Family
    better: Literal["lower", "higher"] | None
    label: str
    fmt: str | Callable[[float], str] = ".3g"
    decided: bool = False

    @property
    def key(self) -> str:
        """Its summary key, ``NET <name>``."""
        return self.metric.key

    def text(self, value: float | None) -> str:
        """``value`` as its column shows it (``-`` when absent)."""
        if value is None:
            return "-"
        return format(value, self.fmt) if isinstance(self.fmt, str) else self.fmt(value)


def milliseconds(ms: float) -> str:
    """A time in ms with the digits a latency carries: three decimals under 10 ms (a small
    model's microseconds), two under 100, one above."""
    return f"{ms:.3f}" if ms < 10 else f"{ms:.2f}" if ms < 100 else f"{ms:.1f}"


def _entries(*infos: MetricInfo) -> Mapping[Metric, MetricInfo]:
    return MappingProxyType({info.metric: info for info in infos})


_M, _F = Metric, Family
LOWER, HIGHER = "lower", "higher"

#: Every whole-model metric, in the order reports list them.
METRICS: Mapping[Metric, MetricInfo] = _entries(
    MetricInfo(_M.LATENCY, "ms", _F.LATENCY, LOWER, "latency ms", milliseconds, decided=True),
    MetricInfo(_M.CPU_TIME, "ms", _F.LATENCY, LOWER, "CPU ms", milliseconds),
    MetricInfo(_M.FIRST_INFERENCE, "ms", _F.STARTUP, LOWER, "first ms", ".1f", decided=True),
    MetricInfo(_M.LOAD_TIME, "ms", _F.STARTUP, LOWER, "load ms", ".0f", decided=True),
    MetricInfo(_M.IMPORT_TIME, "ms", _F.STARTUP, LOWER, "import ms", ".0f"),
    MetricInfo(_M.COMPILE_TIME, "ms", _F.STARTUP, LOWER, "compile ms", ".0f"),
    MetricInfo(_M.MEMORY_LOAD, "MiB", _F.MEMORY, LOWER, "load MiB", ".1f"),
    MetricInfo(_M.MEMORY_PEAK, "MiB", _F.MEMORY, LOWER, "peak MiB", ".0f", decided=True),
    MetricInfo(_M.MODEL_SIZE, "MiB", _F.SIZE, LOWER, "size MiB", ".2f"),
    MetricInfo(_M.CODE_SIZE, "MiB", _F.SIZE, LOWER, "code MiB", ".1f"),
    MetricInfo(_M.ENERGY_PER_INFERENCE, "mJ", _F.ENERGY, LOWER, "mJ/inf", ".3g"),
    MetricInfo(_M.POWER, "W", _F.ENERGY, LOWER, "power W", ".3g"),
    MetricInfo(_M.ERROR_MAX_ABS, "abs", _F.ACCURACY, LOWER, "max abs err", ".2e"),
    MetricInfo(_M.ERROR_MEAN_ABS, "abs", _F.ACCURACY, LOWER, "mean abs err", ".2e"),
    MetricInfo(_M.ERROR_MAX_REL, "rel", _F.ACCURACY, LOWER, "max rel err", ".2e"),
    MetricInfo(_M.ERROR_L2, "abs", _F.ACCURACY, LOWER, "L2 err", ".2e"),
    MetricInfo(_M.ERROR_L2_REL, "rel", _F.ACCURACY, LOWER, "L2 rel err", ".2e"),
    MetricInfo(_M.CROSS_ENTROPY, "nats", _F.ACCURACY, LOWER, "CE nats", ".3g"),
    MetricInfo(_M.KL_DIVERGENCE, "nats", _F.ACCURACY, LOWER, "KL nats", ".2e"),
    MetricInfo(_M.SQNR, "dB", _F.ACCURACY, HIGHER, "SQNR dB", ".1f"),
    MetricInfo(_M.COSINE_SIMILARITY, "cos", _F.ACCURACY, HIGHER, "cosine", ".6f"),
    MetricInfo(_M.TOP1_AGREEMENT, "ratio", _F.ACCURACY, HIGHER, "top-1", ".1%"),
    MetricInfo(_M.TOP5_AGREEMENT, "ratio", _F.ACCURACY, HIGHER, "top-5", ".1%"),
    MetricInfo(_M.QUANTIZATION_SQNR, "dB", _F.ACCURACY, HIGHER, "recipe SQNR dB", ".1f"),
    MetricInfo(_M.QUANTIZATION_L2_REL, "rel", _F.ACCURACY, LOWER, "recipe L2 rel", ".2e"),
    MetricInfo(_M.LOWERING_SQNR, "dB", _F.ACCURACY, HIGHER, "kernels SQNR dB", ".1f"),
    MetricInfo(_M.LOWERING_L2_REL, "rel", _F.ACCURACY, LOWER, "kernels L2 rel", ".2e"),
    # The rounding floor is a reference level to read the lowering error against, not a goal.
    MetricInfo(_M.LOWERING_FLOOR_SQNR, "dB", _F.ACCURACY, None, "floor SQNR dB", ".1f"),
    MetricInfo(_M.LOWERING_FLOOR_L2_REL, "rel", _F.ACCURACY, None, "floor L2 rel", ".2e"),
    MetricInfo(_M.INSTRUCTIONS, "count", _F.COUNTED, LOWER, "instructions", ".5g",
               decided=True),
    MetricInfo(_M.L1D_MISSES, "count", _F.COUNTED, LOWER, "L1d misses", ".4g"),
    MetricInfo(_M.LL_MISSES, "count", _F.COUNTED, LOWER, "LL misses", ".4g"),
    MetricInfo(_M.TTFT, "ms", _F.GENERATIVE, LOWER, "TTFT ms", ".2f", decided=True),
    MetricInfo(_M.TPOT, "ms", _F.GENERATIVE, LOWER, "TPOT ms", ".3f", decided=True),
    MetricInfo(_M.INTER_TOKEN_LATENCY, "ms", _F.GENERATIVE, LOWER, "ITL ms", ".3f"),
    MetricInfo(_M.PREFILL_RATE, "tokens/s", _F.GENERATIVE, HIGHER, "prefill tok/s", ".0f"),
    MetricInfo(_M.DECODE_RATE, "tokens/s", _F.GENERATIVE, HIGHER, "decode tok/s", ".1f"),
    MetricInfo(_M.TOKEN_AGREEMENT, "", _F.GENERATIVE, HIGHER, "agree", ".0%"),
    MetricInfo(_M.FIRST_DIVERGENCE, "tokens", _F.GENERATIVE, HIGHER, "parts@", ".0f"),
    MetricInfo(_M.PERPLEXITY, "", _F.GENERATIVE, LOWER, "ppl", ".4g"),
    MetricInfo(_M.SCENARIO_LATENCY, "ms", _F.SCENARIO, LOWER, "latency ms", ".3f",
               decided=True),
    MetricInfo(_M.EARLY_STOPPING_LATENCY, "ms", _F.SCENARIO, LOWER, "ES ms", ".3f"),
    MetricInfo(_M.THROUGHPUT, "samples/s", _F.SCENARIO, HIGHER, "samples/s", ".4g",
               decided=True),
    MetricInfo(_M.SERVER_QPS, "queries/s", _F.SCENARIO, HIGHER, "QPS", ".4g", decided=True),
    # A verdict (1 valid, 0 not), not a quantity to improve.
    MetricInfo(_M.SCENARIO_VALID, "", _F.SCENARIO, None, "valid", ".0f"),
    MetricInfo(_M.SCENARIO_TTFT, "ms", _F.SCENARIO, LOWER, "TTFT p99 ms", ".2f",
               decided=True),
    MetricInfo(_M.SCENARIO_TPOT, "ms", _F.SCENARIO, LOWER, "TPOT p99 ms", ".3f",
               decided=True),
    MetricInfo(_M.TOKEN_THROUGHPUT, "tokens/s", _F.SCENARIO, HIGHER, "tokens/s", ".4g"),
    MetricInfo(_M.GOODPUT, "queries/s", _F.SCENARIO, HIGHER, "goodput", ".4g"),
)

_BY_KEY = MappingProxyType({info.key: info for info in METRICS.values()})


def metric_info(key: str) -> MetricInfo | None:
    """The registry's entry for a summary key (``NET latency``), or ``None`` for an operator's
    metric or one a user's program made up."""
    return _BY_KEY.get(key)


def decided_metrics() -> dict[str, bool]:
    """The summary keys ``compare`` decides on, each with whether a larger value is worse."""
    return {info.key: info.better == LOWER for info in METRICS.values() if info.decided}


def units_of(*metrics: Metric) -> dict[str, str]:
    """Metric name → the unit its runner prints it in, for the metrics given."""
    return {metric: METRICS[metric].unit for metric in metrics}

