"""The metric registry is complete, and everything that prints or reads a metric reads it there."""

from __future__ import annotations

import ast
from pathlib import Path

import benchlab
from benchlab.ab.pairs import DECIDED_METRICS
from benchlab.schema.metrics import METRICS, Family, decided_metrics, metric_info
from benchlab.report.matrix import COLUMN_UNITS
from benchlab.runner.accuracy import ATTRIBUTION_METRICS, ERROR_METRICS, FLOOR_METRICS
from benchlab.schema.result import Metric

SRC = Path(benchlab.__file__).parent
#: Where metric lines are written: the runners and the runtimes' runner-side backends.
PRINTERS = [*SRC.glob("runner/*.py"), *SRC.glob("frameworks/*/backend.py"),
            *SRC.glob("frameworks/*/generative.py"), *SRC.glob("frameworks/native/*.py")]


def test_every_metric_has_one_entry() -> None:
    assert set(METRICS) == set(Metric), "add the new Metric member to benchlab.schema.metrics.METRICS"
    for metric, info in METRICS.items():
        assert info.metric is metric and info.label and info.key == metric.key
        assert metric_info(metric.key) is info
    assert metric_info("conv1 latency") is None  # an operator's own metric has no entry


def _net_metric_names(path: Path) -> set[str]:
    """The metric names a module writes as whole-model lines with a literal name."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", ""))
                in ("format_metric", "add") and len(node.args) >= 2
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == "NET"):
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                names.add(name.value)
            elif isinstance(name, ast.Attribute) and getattr(name.value, "id", "") == "Metric":
                names.add(Metric[name.attr].value)
    return names


def test_every_metric_a_runner_prints_is_in_the_registry() -> None:
    printed = set().union(*(_net_metric_names(path) for path in PRINTERS))
    assert printed, "the scan found no metric lines: has format_metric moved?"
    known = {metric.value for metric in METRICS}
    assert printed <= known, f"metrics printed but not registered: {sorted(printed - known)}"


def test_the_tables_that_used_to_repeat_the_facts_read_the_registry() -> None:
    for table in (ERROR_METRICS, ATTRIBUTION_METRICS, FLOOR_METRICS):
        assert all(unit == METRICS[Metric(name)].unit for name, unit in table.items())
    assert all(unit == METRICS[metric].unit for metric, unit in COLUMN_UNITS.items())
    assert DECIDED_METRICS == decided_metrics()
    # compare decides on speed, memory and the scenario's figures; bigger rates are better.
    assert DECIDED_METRICS[Metric.LATENCY.key] is True
    assert DECIDED_METRICS[Metric.SERVER_QPS.key] is False
    assert all(METRICS[m].family is Family.ACCURACY for m in map(Metric, ERROR_METRICS))
