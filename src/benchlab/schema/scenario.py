"""Load scenarios: how queries reach the model, judged by MLPerf LoadGen (docs/scenarios.md).

A test with ``scenario`` is not timed call after call by benchlab's loop: LoadGen issues the
queries in the runner process, as its rules for the scenario say, and judges the run.

* ``single_stream``: one sample per query, the next as soon as the last is done; the metric
  is the 90th-percentile latency with LoadGen's early-stopping estimate.
* ``multi_stream``: ``samples_per_query`` samples (8) per query, issued the same way; the
  99th-percentile query latency.
* ``server``: queries at Poisson arrival times. With ``target_qps`` one run at that rate;
  without, benchlab searches the highest rate whose 99th-percentile latency meets
  ``latency_bound_ms`` (a run per rate tried), the figure the scenario reports.
* ``offline``: every sample in one query; throughput in samples/s.

A generative test runs ``server`` or ``offline`` too, a query being one generation: LoadGen
then times tokens (``use_token_latencies``), the first as it is produced. Its server bounds
are on the time to first token and the time per output token at the 99th percentile
(``ttft_bound_ms``, ``tpot_bound_ms``: MLPerf Inference's LLM rules), not on the whole query.

``duration_s`` and ``query_count`` are LoadGen's ``min_duration`` and ``min_query_count``:
benchlab's defaults are short, for use at a desk; ``mlperf_durations`` takes LoadGen's own
minimums (600 s, and its per-scenario query counts) from the ``mlperf.conf`` it ships.
Standard library only: the runner imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PERCENTILES", "SCENARIOS", "Scenario", "parse_milliseconds", "scenario_name"]

#: The scenarios, in benchlab's spelling → LoadGen's.
SCENARIOS = {"single_stream": "SingleStream", "multi_stream": "MultiStream",
             "server": "Server", "offline": "Offline"}
#: The percentile each scenario's latency result is (LoadGen's defaults; offline has none).
PERCENTILES = {"single_stream": 90, "multi_stream": 99, "server": 99}
#: Queries each scenario runs at least by default: as many as LoadGen's early stopping needs
#: to state its percentile when no query is over (p90: 64, p99: 662; docs/scenarios.md), and
#: one query holding every sample for offline.
DEFAULT_QUERY_COUNTS = {"single_stream": 64, "multi_stream": 662, "server": 662, "offline": 1}
#: Seconds each run lasts at least by default (LoadGen's own default is 10 s, its rules 600 s).
DEFAULT_DURATION_S = 5.0


def scenario_name(text: str) -> str:
    """``single_stream`` from any common spelling (``SingleStream``, ``single-stream``...);
    ``ValueError`` naming the scenarios for anything else."""
    key = text.strip().replace("-", "").replace("_", "").replace(" ", "").lower()
    for name, loadgen in SCENARIOS.items():
        if key == loadgen.lower():
            return name
    raise ValueError(f"unknown scenario {text!r}; one of {', '.join(SCENARIOS)}")


def parse_milliseconds(text: str) -> float:
    """``15ms``, ``15``, ``0.015s``, ``1500us`` → milliseconds (a bare number is ms);
    ``ValueError`` for anything else."""
    value = text.strip().lower()
    for suffix, scale in (("ms", 1.0), ("us", 1e-3), ("µs", 1e-3), ("s", 1e3)):
        if value.endswith(suffix):
            value, factor = value[: -len(suffix)].strip(), scale
            break
    else:
        factor = 1.0
    try:
        return float(value) * factor
    except ValueError:
        raise ValueError(f"not a duration: {text!r} (write 15ms, 0.015s or 15)") from None


@dataclass(frozen=True, slots=True)
class Scenario:
    """One load scenario and its settings; every combination LoadGen cannot run is a
    ``ValueError`` here, before any job starts."""

    name: str
    duration_s: float = DEFAULT_DURATION_S
    query_count: int | None = None
    latency_bound_ms: float | None = None
    target_qps: float | None = None
    samples_per_query: int | None = None
    mlperf_durations: bool = False
    accuracy: bool = False
    #: A generative server's bounds: p99 time to first token and p99 time per output token.
    ttft_bound_ms: float | None = None
    tpot_bound_ms: float | None = None
    # Read by pydantic where a spec or the runner's configuration holds a scenario: an
    # unknown key is an error there, not a silent default (a plain dict: no pydantic import).
    __pydantic_config__ = {"extra": "forbid"}

    def __post_init__(self) -> None:
        name = scenario_name(self.name)
        object.__setattr__(self, "name", name)
        problems = []
        if self.duration_s <= 0:
            problems.append(f"duration must be positive, got {self.duration_s:g} s")
        if self.query_count is not None and self.query_count < 1:
            problems.append(f"query_count must be at least 1, got {self.query_count}")
        if self.latency_bound_ms is not None:
            if name != "server":
                problems.append(f"a latency bound applies to the server scenario, not {name} "
                                "(its latency is the result)")
            elif self.latency_bound_ms <= 0:
                problems.append(f"latency_bound_ms must be positive, got "
                                f"{self.latency_bound_ms:g}")
            if self.token_bounds:
                problems.append("a generative server is bounded by its time to first token "
                                "and per output token (ttft_bound_ms, tpot_bound_ms), not by "
                                "a whole query's latency: give one kind of bound")
        elif name == "server" and not self.token_bounds:
            problems.append("the server scenario needs a latency bound (latency_bound_ms, "
                            "--latency-bound): the p99 its QPS must meet; a generative one, "
                            "--ttft-bound and/or --tpot-bound")
        for key in ("ttft_bound_ms", "tpot_bound_ms"):
            value = getattr(self, key)
            if value is None:
                continue
            if name != "server":
                problems.append(f"{key} applies to the server scenario, not {name}")
            elif value <= 0:
                problems.append(f"{key} must be positive, got {value:g}")
        if self.target_qps is not None:
            if name not in ("server", "offline"):
                problems.append(f"target_qps applies to server and offline, not {name}")
            elif self.target_qps <= 0:
                problems.append(f"target_qps must be positive, got {self.target_qps:g}")
        if self.samples_per_query is not None:
            if name != "multi_stream":
                problems.append(f"samples_per_query applies to multi_stream, not {name}")
            elif self.samples_per_query < 1:
                problems.append(f"samples_per_query must be at least 1, got "
                                f"{self.samples_per_query}")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def token_bounds(self) -> bool:
        """Whether the scenario bounds token latencies (a generative server)."""
        return self.ttft_bound_ms is not None or self.tpot_bound_ms is not None

    @property
    def loadgen_name(self) -> str:
        """LoadGen's name of the scenario (``SingleStream``...)."""
        return SCENARIOS[self.name]

    @property
    def searches_peak(self) -> bool:
        """A server run with no rate given: the highest QPS meeting the bound is searched."""
        return self.name == "server" and self.target_qps is None and not self.accuracy

    @property
    def min_queries(self) -> int:
        """The fewest queries a run issues (``mlperf_durations``: LoadGen's own, set there)."""
        return self.query_count or DEFAULT_QUERY_COUNTS[self.name]

    @property
    def label(self) -> str:
        """``server@15ms``, ``multi_stream x8``: how reports and identifiers name it."""
        if self.name == "server":
            rate = f" {self.target_qps:g}qps" if self.target_qps else ""
            if self.token_bounds:
                bounds = "/".join(f"{kind}{value:g}ms" for kind, value in
                                  (("ttft", self.ttft_bound_ms), ("tpot", self.tpot_bound_ms))
                                  if value is not None)
                return f"server@{bounds}{rate}"
            return f"server@{self.latency_bound_ms:g}ms{rate}"
        if self.name == "multi_stream":
            return f"multi_stream x{self.samples_per_query or 8}"
        return self.name

    def to_wire(self) -> dict[str, object]:
        """The runner's JSON form (what is not set is left out)."""
        wire: dict[str, object] = {"name": self.name, "duration_s": self.duration_s}
        for key in ("query_count", "latency_bound_ms", "target_qps", "samples_per_query",
                    "ttft_bound_ms", "tpot_bound_ms"):
            value = getattr(self, key)
            if value is not None:
                wire[key] = value
        if self.mlperf_durations:
            wire["mlperf_durations"] = True
        if self.accuracy:
            wire["accuracy"] = True
        return wire
