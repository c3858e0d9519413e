"""A sweep measured in rounds, with real processes: the order, the process-level interval and
the paired ratio.

Each job is a ``generic`` command running ``level.py``, which appends its cell's name to a
log shared by the whole sweep and prints latencies at a level that depends on the round it
runs in (how many processes the log held before it, divided by the number of cells): a
stand-in for a machine whose speed drifts during a run, the case the rounds are for.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from dataclasses import replace
from pathlib import Path

import benchlab
from benchlab.report.matrix import fastest_ratios, matrix_cells
from benchlab.schema.result import LATENCY_KEY, Sample
from benchlab.stats.summary import median_ci
from benchlab.store import open_store

LEVEL = """
import sys
from pathlib import Path

name, log, cells, factor, follow = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), \\
    float(sys.argv[4]), sys.argv[5] == "follow"
before = log.read_text().split() if log.exists() else []
with log.open("a") as out:
    out.write(name + "\\n")
levels = (1.0, 2.0, 1.4, 0.7)
level = levels[(len(before) // cells) % len(levels)] if follow else 1.0
for i in range(9):
    value = 1000.0 * level * factor * (1.0 + 0.001 * (i % 3))
    print('PyTorchObserver {"type": "NET", "metric": "latency", "unit": "us", "value": %r}'
          % value)
"""


def _spec(tmp_path: Path, cells: dict[str, tuple[float, bool]], repeat: int = 3) -> Path:
    script = tmp_path / "level.py"
    script.write_text(textwrap.dedent(LEVEL))
    log = tmp_path / "order.log"
    tests = [{"identifier": name, "iter": 9, "repeat": repeat,
              "commands": [f"{{PYTHON}} {{files.level}} {name} {log} {len(cells)} {factor} "
                           f"{'follow' if follow else 'steady'}"]}
             for name, (factor, follow) in cells.items()]
    spec = {"model": {"name": "drift", "format": "script", "files": {"level": {
        "location": script.name, "md5": hashlib.md5(script.read_bytes()).hexdigest()}}},
        "tests": tests}
    path = tmp_path / "drift.json"
    path.write_text(json.dumps(spec))
    return path


def _run(tmp_path: Path, spec: Path, **kwargs: object) -> benchlab.Results:
    kwargs.setdefault("race", False)  # the fixed design; tests/stats/test_race.py races
    return benchlab.run([spec], db=tmp_path / "r.db", cache_dir=tmp_path / "cache", **kwargs)


def _order(tmp_path: Path) -> list[str]:
    return (tmp_path / "order.log").read_text().split()


def test_a_sweep_runs_every_cells_first_process_then_every_second(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"a": (1.0, False), "b": (1.0, False), "c": (1.0, False)})
    results = _run(tmp_path, spec)
    assert all(r.ok for r in results)
    assert _order(tmp_path) == ["a", "b", "c"] * 3
    assert all(r.details["repetitions"] == 3 for r in results)


def test_order_jobs_runs_each_jobs_processes_back_to_back(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"a": (1.0, False), "b": (1.0, False)})
    _run(tmp_path, spec, order="jobs")
    assert _order(tmp_path) == ["a", "a", "a", "b", "b", "b"]


def test_processes_at_different_levels_widen_the_interval(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"steady": (1.0, False), "drifting": (1.0, True)})
    by_name = {r.identity.test_identifier: r.summaries[LATENCY_KEY] for r in _run(tmp_path, spec)}
    steady, drifting = by_name["steady"], by_name["drifting"]
    assert steady.processes == drifting.processes == 3
    assert steady.predicts_next_run and drifting.predicts_next_run
    # Round levels 1.0, 2.0, 1.4 (ms): each process's median is kept, in round order.
    assert [round(v) for v in drifting.process_p50s] == [1001, 2002, 1401]
    assert drifting.ci_rel_halfwidth > 10 * steady.ci_rel_halfwidth
    # Pooled over the 27 iterations the old interval was narrow: it ignored the processes.
    pooled = median_ci([s.value for s in _run_samples(tmp_path, "drifting")])
    assert (pooled[1] - pooled[0]) < (drifting.ci_high - drifting.ci_low) / 2


def _run_samples(tmp_path: Path, test: str) -> list[Sample]:
    with open_store(tmp_path / "r.db") as store:
        (run,) = store.list_runs()
        (result,) = [r for r in store.results(run.id, with_samples=True)
                     if r.identity.test_identifier == test]
    return [s for s in result.samples if s.key == LATENCY_KEY]


def test_the_ratio_to_the_fastest_is_paired_by_round(tmp_path: Path) -> None:
    # Every cell follows the machine's drift; b is 1.5 times a, c is a's twin.
    spec = _spec(tmp_path, {"a": (1.0, True), "b": (1.5, True), "c": (1.0, True)})
    results = list(_run(tmp_path, spec))
    # One model with three tests: name each cell by its test, as if three backends.
    cells = [replace(c, label=c.test) for c in matrix_cells(results)]
    ratios = fastest_ratios(cells)
    fastest = next(label for (_, label), r in ratios.items() if r.rounds == 0)
    assert fastest in ("a", "c")
    slow = ratios[("drift", "b")]
    assert slow.rounds == 3 and abs(slow.value - 1.5) < 0.01
    assert slow.low is not None and slow.high is not None
    assert slow.separable and slow.high - slow.low < 0.02
    twin = ratios[("drift", "c" if fastest == "a" else "a")]
    assert twin.rounds == 3 and not twin.separable and abs(twin.value - 1.0) < 0.01
    # Unpaired, the drift swamps the difference: b's p50 sits inside a's interval.
    summaries = {r.identity.test_identifier: r.summaries[LATENCY_KEY] for r in results}
    assert summaries["a"].ci_low <= summaries["b"].p50 <= summaries["a"].ci_high
