"""Every terminal table of ``benchlab run``, ``benchlab results show`` and ``benchlab compare``
fits a 100-column terminal whole: no line wider than the terminal, no cell or header cut with
``…``, every header on one line. The results are the kind that overflowed before: a Hugging
Face Llama's generation row (seconds to first token, gigabytes of memory), load scenarios with
LoadGen's long verdicts, four devices with long names, a comparison of long job labels."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import benchlab.api
from benchlab.cli import ab as cli_ab
from benchlab.cli import commands
from benchlab.cli import output as cli_output
from benchlab.cli import results as cli_results
from benchlab.harness.jobrun import summarize_samples
from benchlab.harness.results import Results
from benchlab.report.ab import comparison_table
from benchlab.report.columns import pack_parts
from benchlab.report.generation import generation_table
from benchlab.report.matrix import device_spread_table
from benchlab.report.scenario import scenario_table
from benchlab.report.tables import TABLE_PARTS, results_table
from benchlab.schema.comparison import (
    Comparison,
    Fidelity,
    MetricComparison,
    Mode,
    Outcome,
    PairedEstimate,
)
from benchlab.schema.result import DetailKey, JobIdentity, Metric, Result, Sample, Status
from benchlab.store import open_store

WIDTH = 100


def _result(model: str, test: str, framework: str, config: dict[str, str],
            samples: list[Sample], details: dict[str, object], *, target: str = "host",
            device: str = "build-01", status: Status = Status.OK) -> Result:
    identity = JobIdentity(spec=f"zoo:{model}", model_name=model, model_hash="h",
                           test_identifier=test, framework=framework, framework_config=config,
                           target=target, device=device)
    return Result(identity=identity, status=status, samples=tuple(samples),
                  summaries=summarize_samples(samples),
                  details={DetailKey.REPETITIONS: 3, **details})


def _generation(framework: str, precision: str, scale: float) -> Result:
    """A Hugging Face Llama's P = 128, G = 64 generation: seconds to the first token, tens of
    milliseconds a token, gigabytes loaded."""
    samples: list[Sample] = []
    for rep in range(3):
        wobble = 1 + 0.013 * (rep - 1)
        samples += [Sample("ttft", 2234.567 * scale * wobble, "ms", repetition=rep),
                    Sample("tpot", 45.123 * scale * wobble, "ms", repetition=rep),
                    Sample("latency", 5077.3 * scale * wobble, "ms", repetition=rep),
                    Sample("prefill_rate", 57.28 / scale, "tokens/s", repetition=rep),
                    Sample("decode_rate", 22.16 / scale, "tokens/s", repetition=rep),
                    Sample("load_time", 12345.0, "ms", repetition=rep),
                    Sample("memory_peak", 4567.0, "MiB", repetition=rep)]
        samples += [Sample("inter_token_latency", 45.123 * scale * (1 + 0.01 * i), "ms",
                           repetition=rep, index=i) for i in range(20)]
    samples += [Sample("token_agreement", 0.96875, ""), Sample("first_divergence", 31, "tokens"),
                Sample("perplexity", 12.3456, ""), Sample("model_size", 2345.67, "MiB")]
    return _result("hfl", "generate[p128 g64 d0]", framework, {"precision": precision},
                   samples, {DetailKey.PRECISION: precision, DetailKey.GENERATION: {
                       "prompt_tokens": 128, "new_tokens": 64, "depth": 0,
                       "compare_tokens": 32}})


def _scenario(framework: str, name: str, label: str, metrics: dict[Metric, float],
              valid: list[float], why: str = "", over: str | None = None,
              model: str = "mobilenet_v2", test: str = "default",
              **bounds: float) -> Result:
    samples = [Sample(Metric.LATENCY, 12.345 + 0.1 * k, "ms", repetition=0, index=k)
               for k in range(20)]
    samples += [Sample(metric, value, "", repetition=0) for metric, value in metrics.items()]
    samples += [Sample(Metric.SCENARIO_VALID, v, "", repetition=k) for k, v in enumerate(valid)]
    facts = {"name": name, "label": label, "why_invalid": why, "over_capacity": over,
             "runs": [{}], **bounds}
    return _result(model, test, framework, {}, samples, {DetailKey.SCENARIO: facts})


def _scenarios() -> list[Result]:
    return [
        _scenario("onnxruntime", "server", "server@15ms",
                  {Metric.SCENARIO_LATENCY: 14.567, Metric.SERVER_QPS: 1234.5,
                   Metric.THROUGHPUT: 1230.25}, [1.0], latency_bound_ms=15.0),
        _scenario("executorch", "single_stream", "single_stream",
                  {Metric.SCENARIO_LATENCY: 12.345, Metric.EARLY_STOPPING_LATENCY: 12.789,
                   Metric.THROUGHPUT: 81.0}, [1.0, 0.0],
                  why="early stopping could not state the 90th percentile with the queries "
                      "issued", over="ran at 1.4× the sustainable rate"),
        _scenario("openvino", "multi_stream", "multi_stream x8",
                  {Metric.SCENARIO_LATENCY: 98.765, Metric.EARLY_STOPPING_LATENCY: 101.234,
                   Metric.THROUGHPUT: 647.9}, [1.0]),
        _scenario("ortgenai", "server", "server@ttft200ms/tpot20ms",
                  {Metric.SCENARIO_LATENCY: 4567.891, Metric.SERVER_QPS: 1.234,
                   Metric.THROUGHPUT: 1.2, Metric.SCENARIO_TTFT: 187.654,
                   Metric.SCENARIO_TPOT: 19.876, Metric.GOODPUT: 1.111,
                   Metric.TOKEN_THROUGHPUT: 78.98}, [0.0],
                  why="the TPOT bound was not met at any rate tried", model="hfl",
                  test="generate[p128 g64 d0]", ttft_bound_ms=200.0, tpot_bound_ms=20.0),
    ]


DEVICES = [("host", "build-01"), ("ssh", "raspberrypi5-lab"), ("adb", "Pixel_8-2A191FDH200ABC"),
           ("adb", "SM-S918B-R5CW71XYZ")]


def _forward(model: str, framework: str, config: dict[str, str], p50: float, *,
             target: str = "host", device: str = "build-01", energy: bool = False) -> Result:
    samples: list[Sample] = []
    for rep in range(3):
        level = p50 * (1 + 0.01 * (rep - 1))
        samples += [Sample("latency", level * (1 + 0.002 * (i % 3)), "ms", repetition=rep,
                           index=i) for i in range(10)]
        samples += [Sample("load_time", 120.0, "ms", repetition=rep),
                    Sample("first_inference", p50 * 3, "ms", repetition=rep),
                    Sample("memory_peak", 812.0, "MiB", repetition=rep)]
        if energy:
            samples += [Sample("energy_per_inference", 12.34, "mJ", repetition=rep),
                        Sample("power", 3.456, "W", repetition=rep)]
    samples += [Sample("model_size", 13.5, "MiB"), Sample("sqnr", 38.2, "dB"),
                Sample("error_max_abs", 0.0123, "abs")]
    return _result(model, "default", framework, config, samples,
                   {DetailKey.PRECISION: config.get("precision", "fp32")},
                   target=target, device=device)


def _across_devices() -> list[Result]:
    backends = [("executorch", {"delegate": "xnnpack", "precision": "int8"}, 3.61),
                ("onnxruntime", {}, 5.02), ("tflite", {}, 4.44)]
    return [_forward("efficientnet_lite0", framework, config, p50 * (1 + 3 * k),
                     target=target, device=device)
            for framework, config, p50 in backends
            for k, (target, device) in enumerate(DEVICES)]


def _everything() -> list[Result]:
    """One run of each kind: forward passes on four devices (energy on one), a text generator
    on six runtimes, load scenarios."""
    generation = [_generation(framework, precision, scale) for framework, precision, scale in (
        ("pytorch", "fp32", 1.0), ("onnxruntime", "fp32", 0.61), ("ortgenai", "int4", 0.23),
        ("openvino", "int8", 0.34), ("ovgenai", "int4", 0.21), ("llamacpp", "q4_0", 0.19))]
    energy = [_forward("mobilenet_v2", "onnxruntime", {"precision": "int8"}, 1.234,
                       energy=True)]
    return [*_across_devices(), *energy, *generation, *_scenarios()]


def _comparison() -> Comparison:
    def metric(job: str, name: str, unit: str, control: float, change: float,
               outcome: Outcome, mode: Mode, verified: bool | None = None) -> MetricComparison:
        fidelity = (Fidelity("control", 1.013, 0.99, 1.04, 12, 0.05),
                    Fidelity("treatment", 1.087, 1.06, 1.11, 12, 0.05)) if mode.interleaved \
            else ()
        model, test = job.split(" @ ")[0].split("/", 1)
        return MetricComparison(
            job=job, model=model, test=test, metric=name, unit=unit,
            control=(control,) * 40, treatment=(control * (1 + change),) * 40,
            estimate=PairedEstimate(40, change, change - 0.0123, change + 0.0145, 0.9875,
                                    0.00012, 0.000345, outcome),
            verified=verified, mode=mode, fidelity=fidelity)

    long_job = "efficientnet_lite0/default @ executorch[delegate=xnnpack,precision=int8]"
    gen_job = "hfl/generate[p128 g64 d0] @ ortgenai[precision=int4]"
    return Comparison(
        control="control:3f2a9c1d0b7e", treatment="treatment:9e8d7c6b5a41",
        metrics=(
            metric(long_job, "NET latency", "ms", 3.6123, 0.0834, Outcome.REGRESSION,
                   Mode.LOCKSTEP, verified=True),
            metric(long_job, "NET first_inference", "ms", 11.234, -0.0021, Outcome.NO_CHANGE,
                   Mode.PROCESS_PAIRS),
            metric(long_job, "NET memory_peak", "MiB", 812.0, 0.1234, Outcome.REGRESSION,
                   Mode.PROCESS_PAIRS, verified=False),
            metric(gen_job, "NET ttft", "ms", 2234.567, -0.1523, Outcome.IMPROVEMENT,
                   Mode.IN_PROCESS),
            metric(gen_job, "NET tpot", "ms", 45.123, 0.0067, Outcome.UNDECIDED,
                   Mode.IN_PROCESS),
        ),
        min_effect=0.01, alpha=0.05, looks=(20, 40, 80))


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _header_blocks(text: str) -> list[list[str]]:
    """Each table's header lines (the rows drawn with ``┃`` above the ``┡`` rule)."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in _lines(text):
        if line.lstrip().startswith("┃"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return blocks


def assert_fits(text: str, *, tables: int | None = None) -> None:
    """No line wider than the terminal, nothing cut, every table's header on one line and
    every header cell filled. The run's noise line is left out of the width: it is one line on
    purpose, whatever its length (one line to grep in a CI log), and the terminal wraps it."""
    wide = [line for line in _lines(text) if len(line) > WIDTH and not line.startswith("Noise: ")]
    assert not wide, f"{len(wide[0])} columns: {wide[0]}"
    cut = [line for line in _lines(text) if "…" in line]
    assert not cut, cut
    blocks = _header_blocks(text)
    assert blocks, text
    if tables is not None:
        assert len(blocks) >= tables, text
    for block in blocks:
        assert len(block) == 1, "a header folded onto two lines:\n" + "\n".join(block)
        cells = [cell.strip() for cell in block[0].strip().strip("┃").split("┃")]
        assert all(cells), block[0]


def _render(*renderables: object) -> str:
    # A height too: given a width alone, rich sizes a terminal whose TERM is dumb at 80x25.
    console = Console(width=WIDTH, height=50, record=True, force_terminal=True,
                      color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115 - a sink
    assert console.width == WIDTH
    for renderable in renderables:
        console.print(renderable)
    return console.export_text()


@pytest.fixture
def results_console(monkeypatch: pytest.MonkeyPatch) -> Iterator[Console]:
    """The CLI's results console, swapped for a 100-column one of our own."""
    console = Console(width=WIDTH, height=50, record=True, force_terminal=True,
                      color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    assert console.width == WIDTH  # whatever TERM says (see _render)
    for module in (commands, cli_ab, cli_output, cli_results):
        monkeypatch.setattr(module, "console", console)
    yield console
    console.file.close()


def _store(tmp_path: Path, results: list[Result]) -> Path:
    db = tmp_path / "r.db"
    with open_store(db) as store:
        run = store.start_run(fingerprint="f", description="", host="h")
        for result in results:
            store.add_result(run.id, result)
        store.finish_run(run.id)
    return db


# -- each table on its own, as shown by default and with --wide --------------------------------


@pytest.mark.parametrize("wide", [False, True])
def test_the_generation_table_fits_and_shows_its_numbers_whole(wide: bool) -> None:
    text = _render(generation_table(_everything(), wide=wide))
    assert_fits(text)
    for number in ("2234.57", "45.123", "22.2", "97%"):  # TTFT, TPOT, decode rate, agreement
        assert number in text, number
    # The model alone: "hfl/generate[p128 g64 d0]" said its workload twice.
    assert "hfl/generate" not in text and "p128 g64 d0" in text
    if wide:  # every column, in parts: ITL, prefill, load, memory, size, parts@, ppl
        for shown in ("ITL p99 ms", "12345", "4567", "2345.67", "12.35", "generation (1/"):
            assert shown in text, shown


@pytest.mark.parametrize("wide", [False, True])
def test_the_scenario_table_fits(wide: bool) -> None:
    text = _render(scenario_table(_everything(), wide=wide))
    assert_fits(text)
    for number in ("14.567", "1234", "4567.891", "187.65", "19.876"):
        assert number in text, number
    assert ("12.789" in text) is wide  # the early-stopping estimate waits for --wide
    assert "1/2 valid:" in text and "INVALID:" in text  # the verdicts wrap, whole words


def test_the_across_devices_table_fits() -> None:
    text = _render(device_spread_table(_everything()))
    assert_fits(text)
    for device, _ in DEVICES[1:]:
        assert device in text
    for device in ("ssh:raspberrypi5-lab", "adb:Pixel_8-2A191FDH200ABC", "adb:SM-S918B-R5CW71XYZ"):
        assert device in text, device  # headers whole, long as they are
    assert "×10.00" in text


@pytest.mark.parametrize("wide", [False, True])
def test_the_comparison_table_fits(wide: bool) -> None:
    text = _render(comparison_table(_comparison(), wide=wide))
    assert_fits(text)
    for number in ("+8.34%", "-15.23%", "2235", "912.2", "[+11.11%, +13.79%]"):
        assert number in text, number
    assert ("fidelity" in text.split("┡")[0]) is wide


@pytest.mark.parametrize("parts", [TABLE_PARTS, ("all",)])
def test_the_main_tables_fit(parts: tuple[str, ...]) -> None:
    text = _render(*filter(None, (results_table(_everything(), part=part) for part in parts)))
    assert_fits(text, tables=len(parts))
    for number in ("3.617", "5077.3", "12345.0", "2345.67", "12.34", "3.46"):
        assert number in text, number


def test_captions_name_only_the_units_of_the_columns_shown() -> None:
    forward = _across_devices()
    plain = " ".join(_render(results_table(forward, part="cost")).split())
    assert "times in ms" in plain and "size in MiB" in plain
    assert "mJ" not in plain and "power" not in plain  # no energy column, no energy unit
    with_energy = " ".join(_render(results_table(_everything(), part="cost")).split())
    assert "energy per inference in mJ, power in W" in with_energy
    generation = " ".join(_render(generation_table(_everything())).split())
    assert "ITL" not in generation and "ppl" not in generation  # their columns wait for --wide


def test_a_table_too_wide_for_the_terminal_is_drawn_in_parts() -> None:
    # Keys in every part; the others, in order, as many as fit; one part when all fit.
    assert pack_parts([10, 10, 20, 20, 20], [True, True, False, False, False], 100) == [
        [0, 1, 2, 3, 4]]
    assert pack_parts([10, 10, 30, 30, 30], [True, True, False, False, False], 95) == [
        [0, 1, 2, 3], [0, 1, 4]]
    # A column wider than any part gets one of its own rather than none.
    assert pack_parts([10, 200, 5], [True, False, False], 80) == [[0, 1], [0, 2]]
    # Narrower still, the generation table keeps its numbers whole in more parts.
    console = Console(width=60, record=True, color_system=None,
                      file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(generation_table(_everything()))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 60 and "…" not in text
    assert "generation (2/" in text and "2234.57" in text and "116.6" in text


# -- through the CLI ---------------------------------------------------------------------------


@pytest.mark.parametrize("wide", [[], ["--wide"]])
def test_results_show_fits_a_100_column_terminal(tmp_path: Path, results_console: Console,
                                                 wide: list[str]) -> None:
    db = _store(tmp_path, _everything())
    outcome = CliRunner().invoke(commands.app, ["results", "show", "--db", str(db), *wide])
    assert outcome.exit_code == 0, outcome.output
    text = results_console.export_text()
    # latency, cost, accuracy (or one wide table); generation; scenarios; across devices
    assert_fits(text, tables=4 if wide else 6)
    assert "across devices" in text and "generation" in text and "load scenarios" in text
    assert ("ITL p99 ms" in text) == bool(wide)


def test_run_fits_a_100_column_terminal(monkeypatch: pytest.MonkeyPatch,
                                        results_console: Console) -> None:
    # The sweep itself is not the point: api.run hands back the results of a run like it.
    monkeypatch.setattr(benchlab.api, "run", lambda *a, **k: Results(tuple(_everything())))
    outcome = CliRunner().invoke(commands.app, ["run", "-q"])
    assert outcome.exit_code == 0, outcome.output
    assert_fits(results_console.export_text(), tables=6)


@pytest.mark.parametrize("wide", [[], ["--wide"]])
def test_compare_fits_a_100_column_terminal(monkeypatch: pytest.MonkeyPatch,
                                            results_console: Console, wide: list[str]) -> None:
    monkeypatch.setattr(benchlab.api, "compare", lambda *a, **k: _comparison())
    outcome = CliRunner().invoke(commands.app, ["compare", "-q", "--control-config",
                                                "onnxruntime", "--treatment-config",
                                                "onnxruntime", *wide])
    assert outcome.exit_code == 1, outcome.output  # a regression
    text = results_console.export_text()
    assert_fits(text)
    assert "+8.34%" in text and ("fidelity" in text.split("┡")[0]) == bool(wide)
