"""Units from a real program's metric lines to every reporter: each number sits under the unit
its header states, converted from the unit the program gave, or is flagged, never relabelled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

import benchlab
from benchlab.report.export import export_results
from benchlab.report.matrix_html import matrix_html
from benchlab.report.matrix import matrix_cells
from benchlab.report.terminal import result_notes, results_table

# Each case: the metric lines one program prints, as (metric, value, unit).
CASES: dict[str, list[tuple[str, float, str]]] = {
    "us": [("latency", 1500.0, "us"), ("model_size", 2 * 2**20, "bytes"),
           ("memory_peak", 409600.0, "KiB"), ("energy_per_inference", 0.004, "J"),
           ("power", 2500.0, "mW")],
    "ns": [("latency", 2_500_000.0, "ns"), ("model_size", 3.0, "MB"),
           ("memory_peak", 524288.0, "KB"), ("energy_per_inference", 7.0, "mJ"),
           ("power", 3.5, "W")],
    "s": [("latency", 0.004, "s"), ("model_size", 1536.0, "KiB"), ("load_time", 0.25, "s")],
    "odd": [("latency", 3.0, "ms"), ("model_size", 5.0, "furlongs")],
}
# The same figures in each column's unit: latency ms, size MiB, memory MiB, energy mJ, power W.
EXPECTED = {
    "us": {"p50": 1.5, "size": 2.0, "memory_peak": 400.0, "energy": 4.0, "power": 2.5},
    "ns": {"p50": 2.5, "size": 3e6 / 2**20, "memory_peak": 524288e3 / 2**20,
           "energy": 7.0, "power": 3.5},
    "s": {"p50": 4.0, "size": 1.5, "load": 250.0},
    "odd": {"p50": 3.0, "size": None},
}
PROGRAM = """
import json, sys
for metric, value, unit in json.loads(sys.argv[1]):
    for _ in range(3 if metric == "latency" else 1):
        line = {"type": "NET", "metric": metric, "unit": unit, "value": str(value)}
        print("PyTorchObserver " + json.dumps(line))
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[benchlab.Result]:
    root = tmp_path_factory.mktemp("units")
    (root / "prog.py").write_text(PROGRAM)
    tests = [{"identifier": name, "commands": [f"{{PYTHON}} {{files.program}} '{json.dumps(lines)}'"]}
             for name, lines in CASES.items()]
    spec = {"model": {"name": "units", "format": "generic",
                      "files": {"program": {"location": "prog.py", "md5": None}}},
            "tests": tests}
    (root / "spec.json").write_text(json.dumps(spec))
    found = list(benchlab.run([root / "spec.json"], db=root / "r.db", cache_dir=root / "cache"))
    assert [r.status for r in found] == [benchlab.Status.OK] * len(CASES), [r.error for r in found]
    return found


def _by_test(results: list[benchlab.Result]) -> dict[str, benchlab.Result]:
    return {r.identity.test_identifier: r for r in results}


def test_the_store_keeps_each_sample_in_its_own_unit(results: list[benchlab.Result]) -> None:
    frame = benchlab.Results(results).samples_dataframe()
    seen = {(row.test, row.metric, row.unit) for row in frame.itertuples()}
    for name, lines in CASES.items():
        assert {(name, metric, unit) for metric, _, unit in lines} <= seen
    summaries = benchlab.Results(results).to_dataframe()
    assert {"unit", "metric_key"} <= set(summaries.columns)
    size = summaries[(summaries.test == "us") & (summaries.metric_key == "NET model_size")]
    assert size.unit.tolist() == ["bytes"] and size.p50.tolist() == [2 * 2**20]


def test_cells_show_every_metric_in_the_column_unit(results: list[benchlab.Result]) -> None:
    cells = {c.test: c for c in matrix_cells(results)}
    for name, expected in EXPECTED.items():
        for field, value in expected.items():
            got = getattr(cells[name], field)
            assert got == (None if value is None else pytest.approx(value)), (name, field)
    assert cells["odd"].unit_notes == ("NET model_size is in 'furlongs' (a unit benchlab does "
                                       "not know), not convertible to MiB: not shown; its "
                                       "samples are stored as reported",)


def _table_text(results: list[benchlab.Result]) -> str:
    console = Console(width=250, record=True, color_system=None)
    console.print(results_table(results))
    return console.export_text()


def test_the_terminal_table_converts_and_flags(results: list[benchlab.Result]) -> None:
    text = _table_text(results)
    caption = " ".join(text.split())  # the caption wraps wherever the width falls
    assert "energy per inference in mJ, power in W" in caption and "size in MiB" in caption
    lines = text.splitlines()
    header = next([c.strip() for c in line.split("┃")][1:-1] for line in lines if "┃" in line)
    rows = {}
    for line in lines:
        cols = [c.strip() for c in line.split("│")][1:-1]
        if cols and cols[0].startswith("units/"):
            rows[cols[0].removeprefix("units/")] = dict(zip(header, cols, strict=True))
    assert {k: rows["us"][k] for k in ("p50", "size", "MiB", "mJ", "W")} == {
        "p50": "1.500", "size": "2.00", "MiB": "400", "mJ": "4", "W": "2.5"}
    assert {k: rows["ns"][k] for k in ("p50", "size", "MiB", "mJ", "W")} == {
        "p50": "2.500", "size": "2.86", "MiB": "500", "mJ": "7", "W": "3.5"}
    assert {k: rows["s"][k] for k in ("p50", "load", "size")} == {
        "p50": "4.000", "load": "250.0", "size": "1.50"}
    # The furlongs are flagged, not shown as MiB.
    assert rows["odd"]["size"] == "?" and "unit" in rows["odd"]["notes"].split(",")
    notes = result_notes(results)
    assert any("units/odd" in n and "'furlongs'" in n for n in notes)


def test_the_html_report_converts_and_flags(results: list[benchlab.Result]) -> None:
    page = matrix_html(matrix_cells(results), title="units")
    for header in ("p50 ms", "size MiB", "peak MiB", "mJ/inf", "power W"):
        assert f"<th>{header}</th>" in page
    assert '<td class="n">1.5</td>' in page or '<td class="n">1.500</td>' in page
    assert '<ul class="unit-notes">' in page and "furlongs" in page


def test_json_and_csv_exports_carry_the_units(results: list[benchlab.Result],
                                              tmp_path: Path) -> None:
    data = benchlab.Results(results).to_dicts()
    units = {s["unit"] for d in data for s in d["samples"]}
    assert {"us", "ns", "s", "bytes", "MB", "KiB", "KB", "J", "mJ", "mW", "W", "furlongs"} <= units
    csv = export_results(results, tmp_path / "out.csv", samples=True).read_text()
    assert csv.splitlines()[0].split(",").count("unit") == 1 and ",furlongs," in csv
