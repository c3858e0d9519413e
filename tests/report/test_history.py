"""History views mark where the runtime's version changed: the history table, its HTML page
(rendered in headless Chromium, offline), ``benchlab results history`` on a real store, and the
run report's cells whose runtime changed since their previous run."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from benchlab.cli.commands import app
from benchlab.report.history import history_table, runtime_changes
from benchlab.report.history_html import _EXTRA_CSS, history_html, write_history_html
from benchlab.report.matrix_html import write_matrix_html
from benchlab.schema.result import JobIdentity, Result, Sample, Status, Summary
from benchlab.store import HistoryPoint, open_store

from .browser import colour_pixels, screenshot
from .test_matrix import _sweep

CHANGE_COLOUR = "#b26a00"


def _point(day: int, p50_us: float, version: str | None) -> HistoryPoint:
    summary = Summary(unit="us", count=30, mean=p50_us, stdev=1.0, min=p50_us - 2,
                      p10=p50_us - 1, p50=p50_us, p90=p50_us + 1, p99=p50_us + 2,
                      max=p50_us + 3, mad=0.5, cv=0.01, ci_low=p50_us - 0.5,
                      ci_high=p50_us + 0.5)
    return HistoryPoint(started_at=f"2026-11-{day:02d}T10:00:00+00:00", run_id=day,
                        result_id=day, job_key="k", test_identifier="default", target="host",
                        device="", summary=summary, runtime_version=version)


POINTS = [_point(1, 5000, "1.31.1"), _point(2, 5010, "1.31.1"), _point(3, 6200, "1.32.0"),
          _point(4, 6190, "1.32.0"), _point(5, 6210, None)]


def test_runtime_changes_are_the_points_after_a_new_version() -> None:
    changes = runtime_changes(POINTS)
    assert [(c.index, c.before, c.after) for c in changes] == [
        (2, "1.31.1", "1.32.0"), (4, "1.32.0", None)]
    assert changes[0].text == "1.31.1 → 1.32.0" and changes[1].text == "1.32.0 → ?"
    assert runtime_changes(POINTS[:2]) == [] and runtime_changes([]) == []


def test_table_marks_the_row_where_the_version_changed() -> None:
    console = Console(width=200, record=True)
    console.print(history_table(POINTS, title="mobilenet_v2 @ onnxruntime"))
    text = console.export_text()
    rows = [line for line in text.splitlines() if "2026-11-" in line]
    assert len(rows) == 5
    assert "◆ 1.31.1 → 1.32.0" in rows[2] and "6.20" in rows[2]
    assert "◆" not in rows[0] + rows[1] + rows[3] and "1.31.1" in rows[1]
    assert "runtime's version changed" in text


def test_table_without_changes_has_no_caption() -> None:
    console = Console(width=200, record=True)
    console.print(history_table(POINTS[:2], title="t"))
    assert "◆" not in console.export_text()


def test_page_draws_a_line_at_each_change_and_loads_nothing() -> None:
    page = history_html(POINTS, title="mobilenet_v2 <onnxruntime>")
    assert page.count('class="runtime-change"') == 2
    assert "1.31.1 → 1.32.0" in page and page.count('class="point"') == 5
    assert page.count("class=changed") == 2 and "&lt;onnxruntime&gt;" in page
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "changed 2 time(s)" in page
    unchanged = history_html([dataclasses.replace(p, runtime_version="1.32.0") for p in POINTS],
                             title="t")
    assert 'class="runtime-change"' not in unchanged and "class=changed" not in unchanged
    assert "No ok measurement" in history_html([], title="t")


def test_points_not_in_a_unit_of_time_are_left_out_of_the_page_and_counted() -> None:
    bytes_point = dataclasses.replace(
        POINTS[0], run_id=99, summary=dataclasses.replace(POINTS[0].summary, unit="bytes"))
    page = history_html([*POINTS, bytes_point], title="t")
    assert "5 measurements" in page
    assert "1 measurement(s) in &#x27;bytes&#x27;, not a unit of time" in page
    only = history_html([bytes_point], title="t")
    assert "No ok measurement of this metric in the store in a unit of time (1 in other " \
           "units)" in only


def test_page_renders_in_headless_chromium_offline(tmp_path: Path) -> None:
    page = write_history_html(POINTS, tmp_path / "history.html", title="history test")
    shot = screenshot(page, tmp_path / "shot.png", (1100, 900))
    assert CHANGE_COLOUR in _EXTRA_CSS
    # The dashed change lines and their labels, and the series.
    assert colour_pixels(shot, CHANGE_COLOUR, tolerance=20) > 100
    assert colour_pixels(shot, "#3b6fb6") > 200


def test_cli_history_marks_a_runtime_upgrade(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with open_store(db) as store:
        for day, version, p50 in ((1, "1.31.1", 1000.0), (2, "1.31.1", 1001.0),
                                  (3, "1.32.0", 1250.0)):
            run = store.start_run(fingerprint=str(day))
            store.add_result(run.id, Result(
                identity=JobIdentity(spec="s", model_name="resnet18", model_hash="h",
                                     test_identifier="cpu", framework="pytorch",
                                     framework_config={}, target="host"),
                status=Status.OK, samples=(Sample("latency", p50, "us"),),
                summaries={"NET latency": _point(day, p50, version).summary},
                details={"runtime_version": version},
                started_at=f"2026-11-0{day}T03:04:05+00:00",
                finished_at=f"2026-11-0{day}T03:04:09+00:00"))
        assert [p.runtime_version for p in store.history("resnet18", "pytorch")] == [
            "1.31.1", "1.31.1", "1.32.0"]
    html = tmp_path / "h.html"
    outcome = CliRunner().invoke(app, ["results", "history", "resnet18", "pytorch", "--db",
                                       str(db), "--html", str(html)])
    assert outcome.exit_code == 0, outcome.output
    assert "◆ 1.31.1 → 1.32.0" in outcome.output
    assert html.is_file() and html.read_text().count('class="runtime-change"') == 1


def _versioned(result: Result, version: str, started_at: str) -> Result:
    return dataclasses.replace(result, details={**result.details, "runtime_version": version},
                               started_at=started_at, finished_at=started_at)


def test_run_report_marks_cells_whose_runtime_changed_since_their_last_run(
    tmp_path: Path,
) -> None:
    old = [_versioned(r, "1.31.1", "2026-11-01T00:00:00+00:00") for r in _sweep()]
    new = [_versioned(r, "1.32.0" if r.identity.framework == "onnxruntime" else "1.31.1",
                      "2026-11-02T00:00:00+00:00") for r in _sweep()]
    with open_store(tmp_path / "r.db") as store:
        for batch in (old, new):
            run = store.start_run(fingerprint="sweep")
            for result in batch:
                store.add_result(run.id, result)
        previous = store.previous_points(new)
    # Only ok results count, and the first run has nothing before it.
    assert len(previous) == len([r for r in new if r.ok])
    assert all(p.started_at.startswith("2026-11-01") and p.runtime_version == "1.31.1"
               for p in previous.values())
    page = write_matrix_html(new, tmp_path / "m.html", previous=previous).read_text()
    # onnxruntime and onnxruntime[int8], each with the change on hovering
    assert len(re.findall(r'<td class="[^"]*\bchanged\b[^"]*" title="[^"]*1\.31\.1', page)) == 2
    assert "<b>mobilenet_v2 @ onnxruntime[int8]</b>: runtime 1.31.1 → 1.32.0 since 2026-11-01" \
        in page
    assert "p50 then 3" in page
    quiet = write_matrix_html(new, tmp_path / "q.html").read_text()
    assert 'class="changed"' not in quiet and "1.32.0" in quiet  # the runtime column

