"""Tests of the ``openvino`` framework adapter: file choice, options, and real runner runs.

The adapter is instantiated directly (its entry point is registered in pyproject.toml).
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import machine_facts
import numpy as np
import pytest

from benchlab.frameworks.base import Framework, JobContext, Unsupported
from benchlab.frameworks.openvino import OpenVinoFramework, model_files
from benchlab.protocol.lines import ParsedOutput
from benchlab.runner.accuracy import save_reference
from benchlab.runner.config import RunnerConfig
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.targets.base import RunRequest
from benchlab.targets.host import HostTarget

from .conftest import job_context, model_def
from .runner_imports import assert_runner_loads_only_its_backend

DEFAULT = FrameworkConfig("openvino", {"precision": "f32"})
IR_FILES = {"openvino": "tiny.xml", "openvino_bin": "tiny.bin"}


@pytest.fixture
def fw() -> OpenVinoFramework:
    return OpenVinoFramework()


@dataclass(frozen=True)
class TinyIR:
    """The tiny ONNX model as OpenVINO IR, its weights in another directory (as in the cache),
    plus a reference archive computed by ONNX Runtime in fp32."""

    xml: Path
    weights: Path
    onnx: Path
    reference: Path


@pytest.fixture(scope="module")
def tiny_ir(onnx_file: Path, tmp_path_factory: pytest.TempPathFactory) -> TinyIR:
    ov = pytest.importorskip("openvino")
    import onnxruntime as ort

    root = tmp_path_factory.mktemp("openvino")
    (root / "xml").mkdir()
    (root / "bin").mkdir()
    # fp32 weights on disk: the default fp16 compression would blur the precision tests.
    ov.save_model(ov.convert_model(str(onnx_file)), str(root / "xml" / "tiny.xml"),
                  compress_to_fp16=False)
    weights = (root / "xml" / "tiny.bin").rename(root / "bin" / "tiny.bin")
    inputs = {"x": np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32)}
    session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    reference = root / "reference.npz"
    save_reference(reference, inputs, session.run(None, inputs))
    return TinyIR(root / "xml" / "tiny.xml", weights, onnx_file, reference)


def _probe_imports() -> dict[str, Any]:
    code = (
        "import json, sys\n"
        "from benchlab.frameworks.openvino import OpenVinoFramework\n"
        "r = OpenVinoFramework().availability()\n"
        "print(json.dumps({'ok': r.ok, 'version': r.version, 'openvino': 'openvino' in "
        "sys.modules}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_is_a_framework_and_never_imports_openvino(fw: OpenVinoFramework) -> None:
    assert isinstance(fw, Framework)
    assert fw.name == "openvino"
    assert _probe_imports() == {
        "ok": True, "version": importlib.metadata.version("openvino"), "openvino": False,
    }


def test_defaults_are_f32_for_ir_and_onnx(
    fw: OpenVinoFramework, make_model: Callable[..., ModelDef]
) -> None:
    assert fw.configurations(make_model(IR_FILES, format="openvino"), []) == [DEFAULT]
    assert fw.configurations(make_model({"onnx": "m.onnx"}), []) == [DEFAULT]
    variants = [
        FrameworkConfig("openvino", {"precision": "bf16"}),
        FrameworkConfig("openvino", {"hint": "throughput", "streams": "auto", "threads": 2}),
        FrameworkConfig("openvino", {"precision": "fp16"}),
    ]
    assert fw.configurations(make_model(IR_FILES), variants) == variants


@pytest.mark.parametrize(
    ("files", "options", "needle"),
    [
        ({"model": "m.pt"}, {}, "needs an OpenVINO IR (.xml + .bin) or an .onnx"),
        ({"openvino": "tiny.xml"}, {}, "add its .bin under model.files key 'openvino_bin'"),
        ({"model": "m.pt", "onnx": "m.onnx"}, {"file": "model"}, "neither an OpenVINO IR"),
        ({"onnx": "m.onnx"}, {"file": "nope"}, "file='nope' is not among model.files"),
        (IR_FILES, {"precision": "int8"}, "precision 'int8' is not one of f32, bf16, f16"),
        (IR_FILES, {"hint": "fast"}, "hint 'fast' is not one of latency, throughput"),
        (IR_FILES, {"threads": 0}, "threads must be a positive integer"),
        (IR_FILES, {"streams": "many"}, "streams must be a positive integer"),
    ],
)
def test_unsupported_requests_say_why(
    fw: OpenVinoFramework,
    make_model: Callable[..., ModelDef],
    files: dict[str, str],
    options: dict[str, Any],
    needle: str,
) -> None:
    outcome = fw.configurations(make_model(files, format="x"),
                                [FrameworkConfig("openvino", options)])
    assert isinstance(outcome, Unsupported)
    assert needle in outcome.reason


def test_which_files_run(make_model: Callable[..., ModelDef]) -> None:
    zoo = make_model({**IR_FILES, "onnx": "m.onnx", "reference": "r.npz"})
    assert model_files(zoo, {}) == ("openvino", "openvino_bin", "ir")
    assert model_files(zoo, {"file": "onnx"}) == ("onnx", None, "onnx")
    # A hand-written spec: weights matched by file stem, any key names.
    own = make_model({"labels": "labels.bin", "net": "dir/net.xml", "w": "other/net.bin"})
    assert model_files(own, {}) == ("net", "w", "ir")
    assert model_files(make_model({"m": "m.ONNX"}), {}) == ("m", None, "onnx")


def test_invocation_sends_the_weights_as_an_extra_file(
    fw: OpenVinoFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
) -> None:
    model = make_model({**IR_FILES, "onnx": "m.onnx"})
    options = {"precision": "bf16", "threads": 3}
    ctx = make_ctx(
        model, FrameworkConfig("openvino", options), iter=4,
        files={"files.openvino": "/a/tiny.xml", "files.openvino_bin": "/b/tiny.bin",
               "files.onnx": "/c/m.onnx"},
    )
    [invocation] = fw.invocations(ctx)
    config = RunnerConfig.model_validate_json(invocation.argv[3])
    assert config.backend == OpenVinoFramework.backend
    assert (config.model_path, config.extra_files) == ("/a/tiny.xml", {"weights": "/b/tiny.bin"})
    assert config.options == options and config.threads == 3 and config.iterations == 4
    onnx_ctx = make_ctx(model, FrameworkConfig("openvino", {"file": "onnx"}),
                        files={"files.onnx": "/c/m.onnx"})
    config = RunnerConfig.model_validate_json(fw.invocations(onnx_ctx)[0].argv[3])
    assert (config.model_path, config.extra_files) == ("/c/m.onnx", {})


# --- real runs: the adapter's command, a runner process, OpenVINO --------------------------


RUNS = {
    "f32": {"precision": "f32"},
    "bf16": {"precision": "bf16"},
    "f16": {"precision": "f16"},
    # Two streams whatever the machine, so that a call really runs two requests.
    "throughput": {"hint": "throughput", "streams": 2, "threads": 2},
    "onnx": {"file": "onnx"},
}
ITERATIONS = 5


@pytest.fixture(scope="module")
def run(tiny_ir: TinyIR, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ParsedOutput]:
    """Runs one of :data:`RUNS` through the adapter and a runner process, once per module."""
    fw, host, done = OpenVinoFramework(), HostTarget(), {}
    model = model_def({**IR_FILES, "onnx": "tiny.onnx", "reference": "reference.npz"},
                      format="openvino")
    files = {"files.openvino": str(tiny_ir.xml), "files.openvino_bin": str(tiny_ir.weights),
             "files.onnx": str(tiny_ir.onnx), "files.reference": str(tiny_ir.reference)}

    def get(name: str) -> ParsedOutput:
        if name not in done:
            [config] = fw.configurations(  # type: ignore[misc]
                model, [FrameworkConfig("openvino", RUNS[name])]
            )
            workdir = tmp_path_factory.mktemp(f"ov-{name}")
            ctx = job_context(model, config, files=files, workdir=str(workdir),
                              iter=ITERATIONS, warmup=1, threads=1, profile_ops=name == "f32")
            results = [host.run(RunRequest(i.argv, env=i.env, cwd=str(workdir), timeout=120))
                       for i in fw.invocations(ctx)]
            assert all(r.ok for r in results), results[0].stderr[-3000:]
            done[name] = fw.parse(results)
        return done[name]

    return get


def _metric(parsed: ParsedOutput, type_: str, metric: str) -> list[float]:
    return [s.value for s in parsed.samples if s.type == type_ and s.metric == metric]


def _compiled_precision(tiny: TinyIR, precision: str) -> str:
    import openvino as ov

    compiled = ov.Core().compile_model(
        ov.Core().read_model(str(tiny.xml), str(tiny.weights)), "CPU",
        {"INFERENCE_PRECISION_HINT": precision},
    )
    return str(compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name())


@pytest.mark.slow
def test_default_run_is_f32_from_the_ir(run: Callable[[str], ParsedOutput]) -> None:
    parsed = run("f32")
    assert len(_metric(parsed, "NET", "latency")) == ITERATIONS
    assert not parsed.malformed
    details = parsed.details
    assert details["runtime"] == "openvino"
    assert details["runtime_version"] == importlib.metadata.version("openvino")
    assert (details["precision"], details["requested_precision"]) == ("f32", "f32")
    assert (details["hint"], details["requests_per_call"], details["threads"]) == (
        "latency", 1, 1)
    assert (details["source_format"], details["model_file"]) == ("ir", "tiny.xml")
    # fp32 against ONNX Runtime's fp32: rounding-level differences only.
    assert _metric(parsed, "NET", "error_max_abs")[0] < 1e-5
    # The .xml and its .bin, pushed separately, are both the model.
    assert _metric(parsed, "NET", "model_size")[0] > 0


@pytest.mark.slow
def test_profile_gives_per_node_type_times(run: Callable[[str], ParsedOutput]) -> None:
    parsed = run("f32")
    ops = {s.type for s in parsed.samples if s.type != "NET"}
    assert "FullyConnected" in ops
    # One sample per profiled iteration (the runner's default 10), none negative.
    fc = _metric(parsed, "FullyConnected", "latency")
    assert len(fc) == RunnerConfig(backend="x").profile_iterations
    assert all(v >= 0 for v in fc)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bf16", "f16"])
def test_reported_precision_is_what_openvino_compiled(
    run: Callable[[str], ParsedOutput], tiny_ir: TinyIR, name: str
) -> None:
    details = run(name).details
    assert details["requested_precision"] == name
    # Not the request: what the CPU plugin really uses (f16 becomes bf16 or f32 on most x86).
    assert details["precision"] == _compiled_precision(tiny_ir, name)


@pytest.mark.slow
def test_bf16_error_is_bf16s_where_the_cpu_runs_it(
    run: Callable[[str], ParsedOutput], machine_case: Callable[[str], None]
) -> None:
    bf16 = run("bf16")
    f32_error = _metric(run("f32"), "NET", "error_max_abs")[0]
    bf16_error = _metric(bf16, "NET", "error_max_abs")[0]
    print(f"max abs error vs fp32 ONNX Runtime: f32 {f32_error:.3g}, bf16 {bf16_error:.3g}")
    if machine_facts.openvino_runs_bf16():
        machine_case("OpenVINO lists BF16: bf16 is less accurate than f32")
        assert bf16.details["precision"] == "bf16"
        assert bf16_error > 10 * max(f32_error, 1e-7)
    else:
        machine_case("OpenVINO lists no BF16: a bf16 request runs as f32, as accurate as f32")
        assert bf16.details["precision"] == "f32"
        assert bf16_error <= 10 * max(f32_error, 1e-7)


@pytest.mark.slow
def test_throughput_hint_runs_several_requests_per_call(
    run: Callable[[str], ParsedOutput],
) -> None:
    parsed = run("throughput")
    details = parsed.details
    assert details["hint"] == "throughput"
    assert details["nstreams"] == 2 and details["threads"] == 2
    assert details["requests_per_call"] >= 2
    assert len(_metric(parsed, "NET", "latency")) == ITERATIONS
    # Every request computed the right thing: outputs come from the first of them.
    assert _metric(parsed, "NET", "error_max_abs")[0] < 1e-5


@pytest.mark.slow
def test_onnx_files_are_read_directly(run: Callable[[str], ParsedOutput]) -> None:
    parsed = run("onnx")
    assert (parsed.details["source_format"], parsed.details["model_file"]) == (
        "onnx", "tiny.onnx")
    assert parsed.details["precision"] == "f32"
    assert _metric(parsed, "NET", "error_max_abs")[0] < 1e-5


@pytest.mark.slow
def test_the_runner_process_loads_only_the_runner_and_this_backend(
    tiny_ir: TinyIR, tmp_path: Path
) -> None:
    fw = OpenVinoFramework()
    model = model_def(IR_FILES, format="openvino")
    ctx = job_context(model, DEFAULT, workdir=str(tmp_path), iter=2, threads=1, files={
        "files.openvino": str(tiny_ir.xml), "files.openvino_bin": str(tiny_ir.weights)})
    [invocation] = fw.invocations(ctx)
    assert assert_runner_loads_only_its_backend(invocation, "openvino") > 0


# -- benchmark_app, OpenVINO's own tool, in place of the runner ----------------------------------

# Captured from the real tool (OpenVINO 2026.4, this machine), with -report_type
# detailed_counters printed after benchlab's marker.
BENCHMARK_APP_OUT = """\
[ INFO ] Read model took 12.27 ms
[ INFO ] Compile model took 29.54 ms
[ INFO ] First inference took 23.13 ms
[Step 11/11] Dumping statistics report
[ INFO ] Count:            30 iterations
[ INFO ] Duration:         20.76 ms
[ INFO ] Latency:
[ INFO ]    Median:        617.56 us
[ INFO ]    Average:       649.81 us
[ INFO ]    Min:           569.29 us
[ INFO ]    Max:           1.11 ms
[ INFO ] Throughput:   1444.95 FPS
BENCHLAB_BENCHMARK_APP_COUNTERS
layerName;execStatus;layerType;execType;realTime (ms);cpuTime (ms)
x;Status.NOT_RUN;Parameter;unknown_f32;0.000;0.000
__module.layers.0/aten::linear/Add;Status.EXECUTED;FullyConnected;brgemm_avx2_f32;0.223;0.223
__module.layers.1/aten::relu/Relu;Status.NOT_RUN;Relu;undef;0.000;0.000
__module.layers.2/aten::linear/Add;Status.EXECUTED;FullyConnected;brgemm_avx2_f32;0.425;0.425
__module.layers.4/aten::softmax;Status.EXECUTED;Softmax;jit_avx2_f32;0.011;0.011
Total;;;;0.659;0.659
"""


def test_benchmark_app_reports_are_read(fw: OpenVinoFramework) -> None:
    from benchlab.targets.base import CommandResult

    parsed = fw.parse([CommandResult(0, BENCHMARK_APP_OUT, "", 0.1)])
    net = {s.key: s.value for s in parsed.samples if s.type == "NET"}
    assert net == {"NET load_time": 12.27, "NET compile_time": 29.54,
                   "NET first_inference": 23.13, "NET latency": pytest.approx(0.64981)}
    ops = {s.type: s.value for s in parsed.samples if s.type != "NET"}
    assert ops == {"FullyConnected": pytest.approx(0.648), "Softmax": pytest.approx(0.011)}
    [summary] = parsed.summaries
    assert summary.num_runs == 30
    assert summary.values == pytest.approx({"p50": 0.61756, "mean": 0.64981, "min": 0.56929,
                                            "max": 1.11})
    assert parsed.details["tool"] == "benchmark_app"
    assert parsed.details["throughput_fps"] == 1444.95


def test_benchmark_app_reads_exponent_numbers() -> None:
    from benchlab.frameworks.native.benchmark_app import parse_benchmark_app

    text = (BENCHMARK_APP_OUT.replace("Read model took 12.27 ms", "Read model took 1.227e+01 ms")
            .replace("Min:           569.29 us", "Min:           5.6929E+02 us")
            .replace("Throughput:   1444.95 FPS", "Throughput:   1.44495e+03 FPS")
            .replace("First inference took 23.13 ms", "First inference took 1e-05 ms"))
    parsed = parse_benchmark_app(text)
    net = {s.key: s.value for s in parsed.samples if s.type == "NET"}
    assert net["NET load_time"] == pytest.approx(12.27)
    assert net["NET first_inference"] == pytest.approx(1e-05)
    assert parsed.summaries[0].values["min"] == pytest.approx(0.56929)
    assert parsed.details["throughput_fps"] == pytest.approx(1444.95)


@pytest.mark.slow
def test_benchmark_app_runs_in_place_of_the_runner(fw: OpenVinoFramework, tiny_ir: TinyIR,
                                                   tmp_path: Path) -> None:
    from benchlab.spec.types import InputDef

    tool = Path(sys.executable).parent / "benchmark_app"
    if not tool.exists():
        pytest.skip("benchmark_app is not installed (openvino)")
    model = model_def(IR_FILES, format="openvino")
    [config] = fw.configurations(model, [FrameworkConfig(  # type: ignore[misc]
        "openvino", {"precision": "f32", "binary": str(tool)})])
    # The xml and its bin sit in different directories, as the artifact cache keeps them.
    ctx = job_context(model, config, files={"files.openvino": str(tiny_ir.xml),
                                            "files.openvino_bin": str(tiny_ir.weights)},
                      workdir=str(tmp_path), iter=20, threads=1, profile_ops=True,
                      inputs=(InputDef("x", (16, 8)),))
    [invocation] = fw.invocations(ctx)
    result = HostTarget().run(RunRequest(invocation.argv, env=invocation.env,
                                         cwd=str(tmp_path), timeout=300))
    assert result.ok, (result.stdout[-2000:], result.stderr[-2000:])
    parsed = fw.parse([result])
    keys = {s.key for s in parsed.samples}
    assert {"NET latency", "NET load_time", "NET compile_time", "NET first_inference"} <= keys
    [summary] = parsed.summaries
    assert summary.num_runs == 20 and summary.values["p50"] > 0
    assert any(s.type != "NET" for s in parsed.samples)  # per-layer-type times


@pytest.mark.slow
def test_benchmark_app_results_appear_in_the_run_table(tiny_ir: TinyIR, tmp_path: Path) -> None:
    import benchlab
    from benchlab.report.matrix import matrix_cells

    tool = Path(sys.executable).parent / "benchmark_app"
    if not tool.exists():
        pytest.skip("benchmark_app is not installed (openvino)")
    spec = {"model": {"name": "tiny", "format": "openvino", "files": {
                "openvino": {"location": str(tiny_ir.xml), "md5": None},
                "openvino_bin": {"location": str(tiny_ir.weights), "md5": None}}},
            "tests": [{"identifier": "default", "iter": 20, "repeat": 2,
                       "inputs": {"x": {"shapes": [[16, 8]]}}}]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    results = list(benchlab.run([tmp_path / "spec.json"],
                                frameworks=[f"openvino:binary={tool},precision=f32"],
                                db=tmp_path / "r.db", cache_dir=tmp_path / "cache"))
    assert [r.status for r in results] == [benchlab.Status.OK], results[0].error
    [cell] = matrix_cells(results)
    assert cell.p50 is not None and cell.p50 > 0 and cell.compile is not None
    assert len(results[0].samples_of("NET latency")) == 2  # one mean per process
