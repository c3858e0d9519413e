"""The measuring loop: load, first inference, warm-up, timed iterations, memory, per-op times.

The loop prints everything through :mod:`benchlab.protocol.lines`, one metric line per sample, after
timing is done so that printing never lands inside or between timed iterations.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from benchlab.schema.diagnosis import LayerTable
from benchlab.protocol.lines import format_metric, write_measurement
from benchlab.schema.result import DetailKey, Metric
from benchlab.runner.backend import (
    LayersUnavailable,
    ProfilingUnavailable,
    RuntimeBackend,
    RuntimeMissing,
    load_backend,
)
from benchlab.runner.accuracy import (
    ATTRIBUTION_METRICS,
    ERROR_METRICS,
    FLOOR_METRICS,
    attribution_stats,
    error_stats,
    floor_stats,
    load_reference,
    nudged,
    stack_sets,
)
from benchlab.runner.layers import compare_layers
from benchlab.runner.config import InputConfig, RunnerConfig
from benchlab.runner.codesize import runtime_code
from benchlab.runner.counting import count_calls
from benchlab.runner.shutdown import bound_shutdown
from benchlab.stats.summary import AdaptiveStop

__all__ = [
    "NS_PER_MS",
    "main",
    "make_inputs",
    "measure",
    "memory_mib",
]

NS_PER_MS = 1e6
"""Nanoseconds per millisecond: the runner's clocks count ns, its metrics are in ms."""
# Without an explicit max_time, one adaptive process measures at most this long.
_ADAPTIVE_MAX_TIME_S = 20.0
# Synthetic input sets in a load scenario's sample library when the model has no reference.
_SCENARIO_SETS = 16


def backend_facts(backend: object) -> list[str]:
    """The metric lines of a backend's optional ``extra_metrics()``."""
    facts: dict[str, tuple[float, str]] = getattr(backend, "extra_metrics", dict)()
    return [format_metric("NET", name, value, unit) for name, (value, unit) in facts.items()]


def memory_mib() -> tuple[float | None, float | None]:
    """Current and peak resident memory of this process, in MiB (``None`` if unreadable)."""
    current = peak = None
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    current = int(line.split()[1]) / 1024.0
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) / 1024.0
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return current, peak


_DTYPES = {
    "float32": np.float32,
    "float16": np.float16,
    "float64": np.float64,
    "int64": np.int64,
    "int32": np.int32,
    "int8": np.int8,
    "uint8": np.uint8,
    "bool": np.bool_,
}


def make_inputs(specs: Sequence[InputConfig], seed: int) -> dict[str, np.ndarray]:
    """Deterministic random inputs: normal floats, small non-negative integers, booleans."""
    rng = np.random.default_rng(seed)
    inputs: dict[str, np.ndarray] = {}
    for spec in specs:
        dtype = _DTYPES.get(spec.dtype)
        if dtype is None:
            raise ValueError(f"input {spec.name!r}: unsupported dtype {spec.dtype!r}")
        if np.issubdtype(dtype, np.floating):
            array = rng.standard_normal(spec.shape).astype(dtype)
        elif dtype is np.bool_:
            array = rng.integers(0, 2, spec.shape).astype(bool)
        else:
            array = rng.integers(0, 100, spec.shape).astype(dtype)
        inputs[spec.name] = array
    return inputs


def _files_mib(paths: Sequence[str | None]) -> float | None:
    """Total size of the model's files in MiB, or ``None`` when the model is not a file."""
    sizes = [os.path.getsize(p) for p in paths if p and os.path.isfile(p)]
    return sum(sizes) / 2**20 if sizes else None


def _attribution_lines(path: str, got: list[list[np.ndarray]],
                       want: list[list[np.ndarray]]) -> list[str]:
    """The quantization and lowering parts of the error, from the simulated outputs' file.

    Its sets must be those of the reference (the zoo writes both from the same inputs).
    """
    simulated = load_reference(path)
    sets = [simulated.outputs, *(outs for _, outs in simulated.more)]
    if len(sets) < len(want):
        raise ValueError(f"{path} holds {len(sets)} output sets; the reference has {len(want)}")
    stats = attribution_stats(stack_sets(got), stack_sets(sets[:len(want)]), stack_sets(want))
    return [format_metric("NET", k, v, ATTRIBUTION_METRICS[k]) for k, v in stats.items()]


def _floor_lines(backend: RuntimeBackend, sets: list[dict[str, np.ndarray]],
                 got: list[list[np.ndarray]], want: list[list[np.ndarray]]) -> list[str]:
    """The rounding floor under the lowering error: every input set run again nudged one ulp
    (:func:`~benchlab.runner.accuracy.nudged`), its outputs against those of the set as it is.
    Nothing when the inputs hold no float (there is no ulp to move). The first set is
    prepared again afterwards, so what follows runs on the timed inputs."""
    moved_sets = [m for k, inputs in enumerate(sets) if (m := nudged(inputs, seed=k)) is not None]
    if len(moved_sets) < len(sets):
        return []
    moved = []
    for inputs in moved_sets:
        backend.prepare(inputs)
        moved.append(backend.outputs())
    backend.prepare(dict(sets[0]))
    stats = floor_stats(stack_sets(moved), stack_sets(got), stack_sets(want))
    return [format_metric("NET", k, v, FLOOR_METRICS[k]) for k, v in stats.items()]


def _diagnosis(backend: RuntimeBackend, config: RunnerConfig,
               inputs: dict[str, np.ndarray]) -> dict[str, Any]:
    """Delegation coverage (when the backend can tell) and, if asked, the layer table.

    Both are optional backend methods: ``delegation() -> Coverage | None`` and
    ``layer_outputs(inputs, reference) -> (own, reference's, order, what the reference is)``.
    """
    found: dict[str, Any] = {}
    delegation = getattr(backend, "delegation", None) if config.delegation else None
    if delegation is not None:
        coverage = delegation()
        if coverage is not None:
            found[DetailKey.DELEGATION] = coverage.to_detail()
    if config.layer_errors:
        capture = getattr(backend, "layer_outputs", None)
        if capture is None:
            table = LayerTable(reference="", note=f"{type(backend).__name__} cannot expose its "
                               "intermediate outputs, so there is no layer table")
        else:
            try:
                own, theirs, order, described = capture(inputs, config.layer_reference)
                table = compare_layers(own, theirs, order, described)
            except LayersUnavailable as why:
                table = LayerTable(reference="", note=str(why))
        found[DetailKey.LAYER_ERRORS] = table.to_detail()
    return found


def _size_lines(config: RunnerConfig, details: dict[str, Any] | None = None) -> list[str]:
    """The model's size and the runtime's code size (the libraries of the runtime's
    distribution this process mapped: :mod:`benchlab.runner.codesize`), each when known; the
    code's files go into ``details`` when given."""
    lines = []
    size = _files_mib([config.model_path, *config.extra_files.values()])
    if size is not None:
        lines.append(format_metric("NET", Metric.MODEL_SIZE, size, "MiB"))
    code = runtime_code(config.runtime) if config.runtime else None
    if code is not None:
        lines.append(format_metric("NET", Metric.CODE_SIZE, code.bytes / 2**20, "MiB"))
        if details is not None:
            details[DetailKey.CODE_SIZE] = code.to_detail()
    return lines


def _head(backend: Any, config: RunnerConfig, import_ms: float, load_ms: float,
          rss_before: float | None, rss_loaded: float | None) -> list[str]:
    """The lines a generative or scenario test prints before its own: import and load time,
    the memory loading took, the model's size and the backend's whole-model facts."""
    head = [format_metric("NET", Metric.IMPORT_TIME, import_ms, "ms"),
            format_metric("NET", Metric.LOAD_TIME, load_ms, "ms")]
    if rss_before is not None and rss_loaded is not None:
        head.append(format_metric("NET", Metric.MEMORY_LOAD, rss_loaded - rss_before, "MiB"))
    head += _size_lines(config)
    head += backend_facts(backend)
    return head


def _peak_mib() -> float | None:
    return memory_mib()[1]


def _inputs(config: RunnerConfig, backend: Any) -> tuple[Any, str | None, dict[str, Any],
                                                        list[InputConfig]]:
    """The reference (``None`` when there is none or it does not fit), why it was set aside,
    and the inputs every call sees with their specs: the reference's own inputs, so every
    backend is compared on what the reference outputs were computed from, else seeded
    random ones of the test's shapes."""
    reference = load_reference(config.reference) if config.reference else None
    skipped = None
    if reference is not None and config.inputs and reference.inputs and [
        list(i.shape) for i in config.inputs
    ] != [list(a.shape) for a in reference.inputs.values()]:
        # Another batch size than the reference was made for: time it, but compare nothing.
        skipped = "the test's input shapes differ from the reference's"
        reference = None
    if reference is not None and reference.inputs:
        inputs = dict(reference.inputs)
        specs = [InputConfig(name=n, shape=list(a.shape), dtype=str(a.dtype))
                 for n, a in inputs.items()]
    else:
        specs = list(config.inputs) or backend.input_specs()
        inputs = make_inputs(specs, config.seed)
    return reference, skipped, inputs, specs


def _measure_scenario(backend: Any, config: RunnerConfig, out: TextIO, reference: Any,
                      inputs: dict[str, Any], specs: list[InputConfig],
                      head: list[str]) -> None:
    """The test under its load scenario. LoadGen's sample library: the reference's input
    sets (their outputs are what accuracy mode checks), else synthetic sets of the test's
    shapes."""
    from benchlab.runner.scenario import measure_scenario

    if reference is not None and reference.inputs:
        sets = [inputs, *(dict(more) for more, _ in reference.more)]
        want = [reference.outputs, *(outs for _, outs in reference.more)] \
            if reference.outputs and all(outs for _, outs in reference.more) else None
    else:
        sets = [make_inputs(specs, config.seed + k) for k in range(_SCENARIO_SETS)]
        want = None
    measure_scenario(backend, config, out, sets=sets, reference_outputs=want,
                     task=reference.task if reference is not None else None,
                     memory_peak=_peak_mib, head=head)


def _accuracy_lines(backend: Any, config: RunnerConfig, reference: Any, outputs: Any,
                    inputs: dict[str, Any], details: dict[str, Any]) -> list[str]:
    """The error metrics against the reference's outputs, over every input set it holds (the
    model runs once more per further set, after timing), and their split into the recipe's
    and the kernels' parts when the spec has a simulated reference."""
    got, want, sets = [outputs], [reference.outputs], [inputs]
    for more_inputs, more_outputs in reference.more:
        if more_outputs:
            backend.prepare(dict(more_inputs))
            got.append(backend.outputs())
            want.append(more_outputs)
            sets.append(dict(more_inputs))
    stats = error_stats(stack_sets(got), stack_sets(want), reference.task)
    details["reference_sets"] = len(got)
    details["reference_task"] = reference.task
    lines = [format_metric("NET", k, v, ERROR_METRICS[k]) for k, v in stats.items()]
    if config.simulated_reference:
        lines += _attribution_lines(config.simulated_reference, got, want)
        lines += _floor_lines(backend, sets, got, want)
    return lines


def _measure_generative(backend: Any, config: RunnerConfig, out: TextIO,
                        head: list[str]) -> None:
    """Time generations (a text generator's backend), alone or under a LoadGen scenario."""
    if config.scenario is not None:
        from benchlab.runner.generative_scenario import measure_generative_scenario

        measure_generative_scenario(backend, config, out, head=head, memory_peak=_peak_mib)
        return
    from benchlab.runner.generate import measure_generation

    measure_generation(backend, config, out, memory_peak=_peak_mib, head=head)


def _measure_counted(backend: Any, config: RunnerConfig, out: TextIO, call: Callable[[], Any],
                     reference: Any, specs: Any) -> None:
    """Counting mode (:func:`benchlab.runner.counting.count_calls`): the launcher prints
    the counts; no time is printed, nor the accuracy check (a timed run's: every call under
    valgrind costs seconds)."""
    count_calls(call, config.warmup, config.iterations)
    details: dict[str, Any] = {**backend.info(),
                               DetailKey.INPUTS: {s.name: [s.shape, s.dtype] for s in specs}}
    lines = [*backend_facts(backend), *_size_lines(config, details)]
    if reference is not None and reference.outputs:
        details["accuracy_skipped"] = ("counting mode: the outputs are checked by a run "
                                       "without count")
    write_measurement(out, lines, details)


def measure(config: RunnerConfig, out: TextIO) -> None:
    """Run the whole measurement described by ``config`` and print its metric lines."""
    clock = time.perf_counter_ns
    t0 = clock()
    backend = load_backend(config.backend, config)
    import_ms = (clock() - t0) / NS_PER_MS
    rss_before, _ = memory_mib()

    t0 = clock()
    backend.load()
    load_ms = (clock() - t0) / NS_PER_MS
    rss_loaded, _ = memory_mib()
    if config.generate is not None:
        _measure_generative(backend, config, out,
                            _head(backend, config, import_ms, load_ms, rss_before, rss_loaded))
        return

    reference, skipped_reference, inputs, specs = _inputs(config, backend)
    if config.scenario is not None:
        _measure_scenario(backend, config, out, reference, inputs, specs,
                          _head(backend, config, import_ms, load_ms, rss_before, rss_loaded))
        return
    call = backend.prepare(inputs)
    if config.count:
        _measure_counted(backend, config, out, call, reference, specs)
        return
    t0 = clock()
    call()
    first_ms = (clock() - t0) / NS_PER_MS
    for _ in range(config.warmup):
        call()

    stopper = AdaptiveStop(
        target_rel_halfwidth=config.target_ci,
        min_iters=config.iterations,
        min_time=config.min_time,
        max_time=config.max_time or (_ADAPTIVE_MAX_TIME_S if config.target_ci else None),
    )
    latencies: list[float] = []
    cpu_times: list[float] = []
    cpu_clock = time.process_time_ns
    # The timed window on the system-wide monotonic clock, so an energy meter read by
    # another process on this machine can be lined up with it.
    window_start = time.monotonic()
    started = clock()
    while True:
        c0 = cpu_clock()
        t0 = clock()
        call()
        t1 = clock()
        c1 = cpu_clock()
        latencies.append((t1 - t0) / NS_PER_MS)
        cpu_times.append((c1 - c0) / NS_PER_MS)
        decision = stopper.should_stop(latencies, (t1 - started) / 1e9)
        if decision is not None:
            break
    window = {"clock": "monotonic", "start": window_start, "end": time.monotonic(),
              "iterations": len(latencies)}
    _, peak = memory_mib()
    outputs = backend.outputs() if (reference is not None or config.dump_outputs) else []
    if config.dump_outputs:
        np.savez(config.dump_outputs, **{f"output.{i}": a for i, a in enumerate(outputs)})

    lines = [
        format_metric("NET", Metric.IMPORT_TIME, import_ms, "ms"),
        format_metric("NET", Metric.LOAD_TIME, load_ms, "ms"),
        format_metric("NET", Metric.FIRST_INFERENCE, first_ms, "ms"),
    ]
    lines += [format_metric("NET", Metric.LATENCY, value, "ms") for value in latencies]
    lines += [format_metric("NET", Metric.CPU_TIME, value, "ms") for value in cpu_times]
    if rss_before is not None and rss_loaded is not None:
        lines.append(format_metric("NET", Metric.MEMORY_LOAD, rss_loaded - rss_before, "MiB"))
    if peak is not None:
        lines.append(format_metric("NET", Metric.MEMORY_PEAK, peak, "MiB"))
    details: dict[str, Any] = {}
    lines += _size_lines(config, details)
    lines += backend_facts(backend)
    if skipped_reference:
        details["accuracy_skipped"] = skipped_reference
    if reference is not None and reference.outputs:
        lines += _accuracy_lines(backend, config, reference, outputs, inputs, details)
    if config.profile_ops:
        try:
            for per_op in backend.profile_ops(config.profile_iterations):
                lines += [format_metric(op, "latency", ms, "ms") for op, ms in per_op.items()]
        except ProfilingUnavailable as why:
            details[DetailKey.OP_PROFILE_UNAVAILABLE] = str(why)
    details.update(backend.info())
    details.update(_diagnosis(backend, config, inputs))
    details.update(decision.to_detail())
    details[DetailKey.INPUTS] = {s.name: [s.shape, s.dtype] for s in specs}
    details[DetailKey.MEASURE_WINDOW] = window
    write_measurement(out, lines, details)


def main(argv: Sequence[str]) -> int:
    """Entry point of ``python -m benchlab.runner``: one JSON argument, metric lines out."""
    if len(argv) != 1:
        print("usage: python -m benchlab.runner '<json config>'", file=sys.stderr)
        return 2
    config = RunnerConfig.model_validate_json(argv[0])
    try:
        measure(config, sys.stdout)
    except RuntimeMissing as missing:
        # The last line of stderr is what the job's failure says.
        print(f"benchlab runner: {missing}", file=sys.stderr)
        return 3
    # A counted process runs under valgrind or an emulator's counting plugin, where teardown
    # is tens of times slower and the counts are read from a dump written at exit: no bound.
    bound_shutdown(None if config.count else config.shutdown_limit)
    return 0
