"""One model's answer across instruction sets: the rule that flags two devices' answers as
different, the rows it makes from real results of four devices (an x86-64 host with VNNI and
three emulated ARM cores), the terminal table at 60 columns and the HTML section."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import benchlab.report
from benchlab.cli import commands
from benchlab.cli import output as cli_output
from benchlab.harness.jobrun import summarize_samples
from benchlab.report.answers import (
    TOLERANCE,
    DeviceAnswer,
    answer_spread,
    answer_spread_html,
    answer_spread_table,
    check_pair,
    device_heading,
    device_instructions,
)
from benchlab.report.matrix import matrix_cells
from benchlab.report.matrix_html import matrix_html, write_matrix_html
from benchlab.schema.result import EnvKey, JobIdentity, Result, Sample, Status
from benchlab.store import open_store

HOST = "host:build-01"
A53, A76, N2 = "ssh:a53", "ssh:a76", "ssh:n2"
#: device label -> (target, device, int8 instructions, emulated)
DEVICES = {
    HOST: ("host", "build-01", "AVX-512 VNNI (VPDPBUSD)", None),
    A53: ("ssh", "a53", "NEON without dot product", "qemu-aarch64 -cpu cortex-a53"),
    A76: ("ssh", "a76", "dot product (SDOT)", "qemu-aarch64 -cpu cortex-a76"),
    N2: ("ssh", "n2", "i8mm (SMMLA)", "qemu-aarch64 -cpu neoverse-n2"),
}


def _result(device: str, model: str, framework: str, config: dict[str, str], *,
            l2: float | None, top1: float | None = 1.0, floor: float | None = None,
            status: Status = Status.OK, instructions: bool = True) -> Result:
    target, host, int8, emulated = DEVICES[device]
    samples = [Sample("latency", 4.0 + 0.1 * i, "ms", index=i) for i in range(10)]
    if l2 is not None:
        samples += [Sample("error_l2_rel", l2, "rel"),
                    Sample("sqnr", -20 * math.log10(l2), "dB")]
    if top1 is not None and l2 is not None:
        samples.append(Sample("top1_agreement", top1, "ratio"))
    if floor is not None:
        samples.append(Sample("lowering_floor_l2_rel", floor, "rel"))
    if status is not Status.OK:
        samples = []
    environment: dict[str, object] = {EnvKey.HOSTNAME: host}
    if instructions:
        environment[EnvKey.INT8_INSTRUCTIONS] = int8
    if emulated:
        environment[EnvKey.EMULATED] = emulated
    identity = JobIdentity(spec=f"zoo:{model}", model_name=model, model_hash="h",
                           test_identifier="default", framework=framework,
                           framework_config=config, target=target, device=host)
    return Result(identity=identity, status=status, samples=tuple(samples),
                  summaries=summarize_samples(samples), environment=environment,
                  error=None if status is Status.OK else "crashed",
                  details={"precision": config.get("precision", "fp32")})


INT8 = {"precision": "int8"}


def _lab() -> list[Result]:
    """One run on four devices:

    - mobilenet_v2 on ONNX Runtime int8: relative L2 errors within 0.6% of each other, floor
      1%: the same answer;
    - mobilenet_v2 on ExecuTorch int8: the A53 (no dot product) 4 points further from the
      reference than the host, floor 1%: different answers;
    - resnet18 on ONNX Runtime int8: the same L2 error, but the A76 changed a top class;
    - convnet fp32 (no floor): 2e-7 apart, within the tolerance; the N2 failed;
    - mlp fp32: 5e-5 apart without a floor, beyond the tolerance;
    - tiny, latency only (no reference): no row.
    """
    out = []
    for device, l2 in ((HOST, 0.050), (A53, 0.056), (A76, 0.052), (N2, 0.051)):
        out.append(_result(device, "mobilenet_v2", "onnxruntime", INT8, l2=l2, floor=0.010))
    for device, l2 in ((HOST, 0.050), (A53, 0.090), (A76, 0.051), (N2, 0.052)):
        out.append(_result(device, "mobilenet_v2", "executorch", INT8, l2=l2, floor=0.010))
    for device, top1 in ((HOST, 1.0), (A53, 1.0), (A76, 0.984375), (N2, 1.0)):
        out.append(_result(device, "resnet18", "onnxruntime", INT8, l2=0.04, top1=top1,
                           floor=0.01))
    for device, l2 in ((HOST, 1.0e-7), (A53, 3.0e-7), (A76, 2.0e-7)):
        out.append(_result(device, "convnet", "onnxruntime", {}, l2=l2))
    out.append(_result(N2, "convnet", "onnxruntime", {}, l2=None, status=Status.FAILED))
    for device, l2 in ((HOST, 1.0e-7), (A53, 5.0e-5)):
        out.append(_result(device, "mlp", "onnxruntime", {}, l2=l2))
    for device in DEVICES:
        out.append(_result(device, "tiny", "onnxruntime", {}, l2=None))
    return out


def _rows() -> dict[tuple[str, str], object]:
    results = _lab()
    rows = answer_spread(matrix_cells(results), device_instructions(results))
    return {(row.model, row.label): row for row in rows}


# -- the rule ----------------------------------------------------------------------------------


def test_an_l2_gap_above_the_larger_floor_differs_and_one_within_it_does_not() -> None:
    host = DeviceAnswer(error_l2_rel=0.050, top1=1.0, floor_l2_rel=0.004)
    within = check_pair("x", host, "y", DeviceAnswer(error_l2_rel=0.058, top1=1.0,
                                                     floor_l2_rel=0.010))
    assert within is not None and not within.differs and within.reason() == ""
    assert within.bound == 0.010 and within.floor_known  # the larger of the two floors
    beyond = check_pair("x", host, "y", DeviceAnswer(error_l2_rel=0.061, top1=1.0,
                                                     floor_l2_rel=0.010))
    assert beyond is not None and beyond.differs
    assert "L2 gap 1.10e-02 > floor 1.00e-02 (x vs y)" == beyond.reason()
    # One device's floor is enough: the other may not have measured one.
    one_floor = check_pair("x", DeviceAnswer(error_l2_rel=0.05), "y",
                           DeviceAnswer(error_l2_rel=0.052, floor_l2_rel=0.01))
    assert one_floor is not None and not one_floor.differs


def test_without_a_floor_the_tolerance_is_one_in_a_million() -> None:
    fp32 = DeviceAnswer(error_l2_rel=1e-7, top1=1.0)
    same = check_pair("x", fp32, "y", DeviceAnswer(error_l2_rel=9e-7, top1=1.0))
    assert same is not None and not same.differs and same.bound == TOLERANCE == 1e-6
    apart = check_pair("x", fp32, "y", DeviceAnswer(error_l2_rel=3e-6, top1=1.0))
    assert apart is not None and apart.differs and not apart.floor_known
    assert "> tolerance 1.00e-06" in apart.reason()
    # A floor of zero (no output moved) still leaves the statistics' own rounding.
    zero = check_pair("x", DeviceAnswer(error_l2_rel=0.1, floor_l2_rel=0.0), "y",
                      DeviceAnswer(error_l2_rel=0.1 + 1e-12, floor_l2_rel=0.0))
    assert zero is not None and not zero.differs


def test_a_top1_change_differs_even_with_equal_l2_errors() -> None:
    check = check_pair("x", DeviceAnswer(error_l2_rel=0.04, top1=1.0, floor_l2_rel=0.01),
                       "y", DeviceAnswer(error_l2_rel=0.04, top1=0.96875, floor_l2_rel=0.01))
    assert check is not None and check.differs and check.gap == 0.0
    assert check.top1 == (1.0, 0.96875) and check.reason().startswith("top-1 100.0% on x")
    # Top-1 alone, no L2 error: still compared.
    alone = check_pair("x", DeviceAnswer(top1=0.5), "y", DeviceAnswer(top1=0.5))
    assert alone is not None and not alone.differs and alone.gap is None


def test_devices_without_a_shared_statistic_are_not_compared() -> None:
    assert check_pair("x", DeviceAnswer(sqnr=30.0), "y", DeviceAnswer(error_l2_rel=0.1)) is None
    assert check_pair("x", DeviceAnswer(top1=1.0), "y", DeviceAnswer(error_l2_rel=0.1)) is None


# -- the rows ----------------------------------------------------------------------------------


def test_rows_flag_a_top1_change_an_l2_gap_and_pass_what_is_within_the_floor() -> None:
    rows = _rows()
    assert set(rows) == {("mobilenet_v2", "onnxruntime[int8]"),
                         ("mobilenet_v2", "executorch[int8]"),
                         ("resnet18", "onnxruntime[int8]"), ("convnet", "onnxruntime"),
                         ("mlp", "onnxruntime")}  # tiny has no accuracy: no row
    same = rows[("mobilenet_v2", "onnxruntime[int8]")]
    assert not same.differs and same.flag == "same within floor"
    assert len(same.checks) == 6  # every pair of four devices
    l2 = rows[("mobilenet_v2", "executorch[int8]")]
    assert l2.differs and l2.worst is not None
    assert {l2.worst.first, l2.worst.second} == {HOST, A53}
    assert l2.flag == f"differs: L2 gap 4.00e-02 > floor 1.00e-02 ({HOST} vs {A53}) " \
                      "(+2 more pairs)"
    top1 = rows[("resnet18", "onnxruntime[int8]")]
    assert top1.differs and top1.flag.startswith("differs: top-1")
    assert A76 in top1.flag and "98.4%" in top1.flag
    fp32 = rows[("convnet", "onnxruntime")]
    assert not fp32.differs and fp32.answers[N2] is None  # failed there
    assert len(fp32.checks) == 3
    mlp = rows[("mlp", "onnxruntime")]
    assert mlp.differs and "tolerance" in mlp.flag
    assert mlp.answers[A76] is None and mlp.answers[N2] is None  # not run there


def test_a_row_names_its_largest_sqnr_gap_and_each_devices_instructions() -> None:
    row = _rows()[("mobilenet_v2", "executorch[int8]")]
    gap = row.sqnr_gap
    assert gap is not None
    assert gap[1:] == (HOST, A53)  # the more accurate device first
    assert gap[0] == pytest.approx(20 * math.log10(0.090 / 0.050))
    assert row.answers[A76].int8_instructions == "dot product (SDOT)"
    assert row.answers[HOST].emulated is None and row.answers[N2].emulated
    assert row.answers[HOST].text() == "26.0 dB · 100.0%"


def test_one_device_or_old_results_without_instructions() -> None:
    host_only = [r for r in _lab() if r.identity.device_label == HOST]
    assert answer_spread(matrix_cells(host_only)) == []
    assert answer_spread_table(host_only) is None
    old = [_result(d, "mlp", "onnxruntime", {}, l2=1e-7, instructions=False)
           for d in (HOST, A53)]
    assert device_instructions(old) == {HOST: None, A53: None}
    table = _render(answer_spread_table(old), width=200)
    assert "int8 instructions" not in table and "None" not in table


def test_an_emulated_device_is_marked_once() -> None:
    assert device_heading("ssh:a53", True) == "ssh:a53 (emulated)"
    assert device_heading("adb:Pixel (emulated)", True) == "adb:Pixel (emulated)"
    assert device_heading("ssh:pi5", False) == "ssh:pi5"


def test_the_report_package_exports_the_answers() -> None:
    assert benchlab.report.answer_spread is answer_spread
    assert benchlab.report.answer_spread_table is answer_spread_table


# -- the terminal ------------------------------------------------------------------------------


def _render(renderable: object, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_the_table_fits_60_dumb_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setenv("TERM", "dumb")
    console = Console(record=True, file=io.StringIO())
    assert console.width == 60 and console.color_system is None
    console.print(answer_spread_table(_lab()))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 60, text
    assert "…" not in text and "answers across devices (1/" in text
    flat = " ".join(text.split())
    for phrase in ("same within floor", "differs: top-1", "4.00e-02 > floor", "floor, 1e-6",
                   "(emulated)", "AVX-512 VNNI (VPDPBUSD)", "NEON without dot product",
                   "i8mm (SMMLA)", "26.0 dB · 100.0%", "lower bound"):
        assert phrase in flat, phrase
    assert f"{HOST} (emulated)" not in flat  # the host is real hardware


def test_results_show_prints_the_answers_after_the_latency_spread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "r.db"
    with open_store(db) as store:
        run = store.start_run(fingerprint="f", description="", host="h")
        for result in _lab():
            store.add_result(run.id, result)
        store.finish_run(run.id)
    # The CLI's console, as a 60-column dumb terminal makes it (a pipe gets 180 columns).
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setenv("TERM", "dumb")
    # Rich sizes a dumb terminal at 80 columns whatever COLUMNS says (only under xdist did it
    # read 60 here), so the size is given as the 60-column terminal has it.
    console = Console(record=True, force_terminal=True, file=io.StringIO(), width=60,
                      height=25)
    assert console.width == 60
    monkeypatch.setattr(cli_output, "console", console)  # results show prints through it
    outcome = CliRunner().invoke(commands.app, ["results", "show", "--db", str(db)])
    assert outcome.exit_code == 0, outcome.output
    shown = console.export_text()
    # The emulation and noise lines are one line each on purpose (one line to grep in a log).
    lines = [line for line in shown.splitlines()
             if not line.startswith(("Noise: ", "Emulated: "))]
    assert max(len(line) for line in lines) <= 60, shown
    assert "…" not in shown
    latency, answers = shown.index("across devices"), shown.index("answers across devices")
    assert latency < answers
    assert "same within floor" in shown and "differs:" in shown


# -- the HTML report ---------------------------------------------------------------------------


def test_the_html_report_has_the_answers_beside_the_latency_spread(tmp_path: Path) -> None:
    results = _lab()
    page = write_matrix_html(results, tmp_path / "lab.html").read_text()
    assert '<h2 id="answers-across-devices">Answers across devices</h2>' in page
    assert page.index("<h2>Across devices</h2>") < page.index("Answers across devices") \
        < page.index("<h2>All cells</h2>")
    for text in ("ssh:a53 (emulated) · NEON without dot product",
                 "host:build-01 · AVX-512 VNNI (VPDPBUSD)", "i8mm (SMMLA)",
                 "same within floor", "26.0 dB · 100.0%", 'title="L2 rel err 5.00e-02, floor'):
        assert text in page, text
    assert page.count('class="differs"') == 3  # executorch, resnet18, mlp
    assert "differs: top-1" in page and "&lt;" not in page.split("answers-across")[1][:10]
    assert "<script" not in page and "http://" not in page.split("</style>")[1]
    # Names are escaped like every other cell of the report.
    odd = [_result(d, "m<x>", "onnxruntime", {}, l2=1e-7) for d in (HOST, A53)]
    section = answer_spread_html(matrix_cells(odd), device_instructions(odd))
    assert "m&lt;x&gt;" in section and "<x>" not in section
    # One device: no section.
    host_only = [r for r in results if r.identity.device_label == HOST]
    assert "Answers across devices" not in matrix_html(matrix_cells(host_only))
