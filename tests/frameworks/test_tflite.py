"""Tests of the ``tflite`` (LiteRT) framework adapter: file choice, its command, real runs.

The runs use a two-input, two-output model converted once per session by ``litert_torch`` in
a separate process (the converter pulls in JAX and TensorFlow's converter, which the test
process has no business importing).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from tiny_models import run_export_script

from benchlab.errors import UsageError
from benchlab.frameworks.base import Framework, Invocation, JobContext, Unsupported
from benchlab.frameworks.tflite import TfliteFramework
from benchlab.protocol.lines import ParsedOutput
from benchlab.runner.accuracy import load_reference, save_reference
from benchlab.runner.config import RunnerConfig
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.targets.base import CommandResult, RunRequest
from benchlab.targets.host import HostTarget

from .availability import probe
from .runner_imports import assert_runner_loads_only_its_backend

DEFAULT = FrameworkConfig("tflite", {})
INT8 = FrameworkConfig("tflite", {"precision": "int8"})

# Converts a tiny two-input, two-output module and writes what the runs compare against:
# ref.npz (reference inputs named x, y + the torch outputs) and seed0.npz (the torch outputs for
# the inputs the runner synthesises with seed 0 when neither spec nor reference gives any).
EXPORT = """
import sys
from pathlib import Path

import numpy as np
import torch

from benchlab.runner.accuracy import save_reference
from benchlab.runner.config import InputConfig
from benchlab.runner.loop import make_inputs

out = Path(sys.argv[1])
torch.manual_seed(0)


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x, y):
        hidden = torch.relu(self.fc1(x))
        return self.fc2(hidden) + y, hidden.sum(dim=1, keepdim=True)


model = Tiny().eval()


def run(*arrays):
    with torch.no_grad():
        return [t.numpy() for t in model(*(torch.from_numpy(a) for a in arrays))]


rng = np.random.default_rng(1)
x = rng.standard_normal((2, 8)).astype(np.float32)
y = rng.standard_normal((2, 4)).astype(np.float32)
save_reference(out / "ref.npz", {"x": x, "y": y}, run(x, y))
seeded = make_inputs([InputConfig(name="a", shape=[2, 8]), InputConfig(name="b", shape=[2, 4])], 0)
np.savez(out / "seed0.npz", *run(*seeded.values()))

import litert_torch

args = (torch.from_numpy(x), torch.from_numpy(y))
litert_torch.convert(model, args).export(str(out / "tiny.tflite"))



class Twelve(torch.nn.Module):
    # Output i has i + 1 columns, so the dumped order can be read off the shapes.
    def forward(self, x):
        return tuple(x[:, : i + 1] * (i + 1) for i in range(12))


litert_torch.convert(Twelve().eval(), (torch.randn(1, 12),)).export(str(out / "twelve.tflite"))

# Big enough (eight 256x256 layers on 64 rows, about 70 MFLOP) that litert-benchmark, which
# rounds to 0.01 ms, never reports 0.00 ms for it; the tiny model above can take under 5 us.
torch.manual_seed(0)
wide = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)]).eval()
litert_torch.convert(wide, (torch.randn(64, 256),)).export(str(out / "wide.tflite"))

# Static int8 (PT2E): prepare, calibrate, convert, then convert that to a fully int8 .tflite.
from litert_torch.quantize.pt2e_quantizer import PT2EQuantizer, get_symmetric_quantization_config
from litert_torch.quantize.quant_config import QuantConfig
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

quantizer = PT2EQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
prepared = prepare_pt2e(torch.export.export(model, args).module(), quantizer)
for _ in range(8):
    prepared(torch.randn(2, 8), torch.randn(2, 4))
prepared(*args)
quantized = convert_pt2e(prepared, fold_quantize=False)
litert_torch.convert(quantized, args, quant_config=QuantConfig(pt2e_quantizer=quantizer)).export(
    str(out / "tiny.int8.tflite"))
"""


@dataclass(frozen=True)
class Tiny:
    """The converted model and the files to check its runs against."""

    model: Path
    int8: Path
    twelve: Path
    reference: Path
    seed0: Path
    wide: Path


@pytest.fixture(scope="session")
def tiny_tflite(build_once: Callable[[str, Callable[[Path], None]], Path]) -> Tiny:
    # Built once per test run, whichever worker asks first (tests/conftest.py).
    out = build_once("tiny-tflite", functools.partial(run_export_script, EXPORT))
    return Tiny(out / "tiny.tflite", out / "tiny.int8.tflite", out / "twelve.tflite",
                out / "ref.npz", out / "seed0.npz", out / "wide.tflite")


@pytest.fixture
def fw() -> TfliteFramework:
    return TfliteFramework()


def _run(ctx: JobContext, fw: TfliteFramework) -> list[CommandResult]:
    host = HostTarget()
    return [
        host.run(RunRequest(i.argv, env=i.env, cwd=ctx.workdir, timeout=120))
        for i in fw.invocations(ctx)
    ]


def _run_with(invocation: Invocation, **overrides: object) -> ParsedOutput:
    """Run an adapter's runner command with some runner fields changed (``dump_outputs``)."""
    config = {**json.loads(invocation.argv[-1]), **overrides}
    proc = subprocess.run([*invocation.argv[:-1], json.dumps(config)], capture_output=True,
                          text=True, timeout=120, check=False, env={**os.environ, **invocation.env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return TfliteFramework().parse([CommandResult(0, proc.stdout, proc.stderr, 0.0)])


def test_is_a_framework(fw: TfliteFramework) -> None:
    assert isinstance(fw, Framework)
    assert fw.name == "tflite"


def test_defaults_are_fp32_plus_int8_when_there_is_one(
    fw: TfliteFramework, make_model: Callable[..., ModelDef]
) -> None:
    assert fw.configurations(make_model({"tflite": "m.tflite"}, format="tflite"), []) == [DEFAULT]
    both = make_model({"tflite": "m.tflite", "tflite_int8": "m.int8.tflite"}, format="tflite")
    assert fw.configurations(both, []) == [DEFAULT, INT8]
    # A user's own key is found by its suffix, whatever the case.
    assert fw.configurations(make_model({"model": "NET.TFLITE"}), []) == [DEFAULT]
    # An int8-only model is measured as int8, not presented as a default fp32 run.
    assert fw.configurations(make_model({"tflite_int8": "m.int8.tflite"}), []) == [INT8]


def test_a_model_without_a_tflite_file_is_unsupported(
    fw: TfliteFramework, make_model: Callable[..., ModelDef]
) -> None:
    outcome = fw.configurations(make_model({"model": "m.onnx"}, format="onnx"), [])
    assert isinstance(outcome, Unsupported)
    assert ".tflite" in outcome.reason and "'onnx'" in outcome.reason
    outcome = fw.configurations(make_model({"model": "m.onnx"}), [DEFAULT])
    assert isinstance(outcome, Unsupported) and ".tflite" in outcome.reason


@pytest.mark.parametrize(
    ("files", "options", "needle"),
    [
        # precision=int8 is strict: the fp32 file must not stand in for it.
        ({"tflite": "m.tflite"}, {"precision": "int8"}, "'tflite_int8'"),
        ({"tflite_int8": "q.tflite"}, {"precision": "fp32"}, "int8"),
        ({"tflite": "m.tflite"}, {"precision": "fp16"}, "precision must be one of"),
        ({"tflite": "m.tflite"}, {"xnnpack": "no"}, "xnnpack must be true or false"),
        ({"tflite": "m.tflite"}, {"file": "other"}, "file='other'"),
    ],
)
def test_impossible_requests_are_unsupported_with_the_reason(
    fw: TfliteFramework,
    make_model: Callable[..., ModelDef],
    files: dict[str, str],
    options: dict[str, object],
    needle: str,
) -> None:
    outcome = fw.configurations(make_model(files), [FrameworkConfig("tflite", options)])
    assert isinstance(outcome, Unsupported)
    assert needle in outcome.reason


def test_requested_configurations_are_kept(
    fw: TfliteFramework, make_model: Callable[..., ModelDef]
) -> None:
    model = make_model({"tflite": "m.tflite", "tflite_int8": "q.tflite"})
    requested = [FrameworkConfig("tflite", {"xnnpack": False, "threads": 2}), INT8,
                 FrameworkConfig("tflite", {"file": "tflite_int8"})]
    assert fw.configurations(model, requested) == requested


@pytest.mark.parametrize(
    ("options", "path", "precision"),
    [
        ({}, "/t/m.tflite", "fp32"),
        ({"precision": "fp32"}, "/t/m.tflite", "fp32"),
        ({"precision": "int8"}, "/t/q.tflite", "int8"),
        # An explicit file's precision follows its key unless stated.
        ({"file": "tflite_int8"}, "/t/q.tflite", "int8"),
        ({"file": "extra", "xnnpack": False}, "/t/x.tflite", "fp32"),
    ],
)
def test_invocation_runs_the_chosen_file_and_names_its_precision(
    fw: TfliteFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    options: dict[str, object],
    path: str,
    precision: str,
) -> None:
    # The fp32 file is listed last: the zoo key wins over file order.
    model = make_model({"extra": "x.tflite", "tflite_int8": "q.tflite", "tflite": "m.tflite"})
    files = {"files.extra": "/t/x.tflite", "files.tflite_int8": "/t/q.tflite",
             "files.tflite": "/t/m.tflite"}
    ctx = make_ctx(model, FrameworkConfig("tflite", options), files=files, threads=3)
    [invocation] = fw.invocations(ctx)
    config = RunnerConfig.model_validate_json(invocation.argv[3])
    assert config.backend == TfliteFramework.backend
    assert config.model_path == path
    assert config.options == {**options, "precision": precision}
    assert config.threads == 3 and invocation.env["OMP_NUM_THREADS"] == "3"


def test_invocation_of_an_unstaged_file_is_a_usage_error(
    fw: TfliteFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
) -> None:
    ctx = make_ctx(make_model({"tflite": "m.tflite"}), DEFAULT, files={})
    with pytest.raises(UsageError, match="'tflite' was not staged"):
        fw.invocations(ctx)


def test_availability_does_not_import_litert() -> None:
    result = probe("tflite", "ai_edge_litert", "litert_torch", "torch")
    assert result == {
        "ok": True, "version": importlib.metadata.version("ai-edge-litert"), "imported": [],
    }


def test_quantized_inputs_and_outputs_use_the_tensor_scale() -> None:
    # Importing LiteRT here is cheap; the exact arithmetic is easier to pin down here than
    # through the int8 model's run below.
    from benchlab.frameworks.tflite.backend import from_output, to_input

    int8 = {"dtype": np.int8, "quantization": (0.5, 3)}
    fed = to_input(int8, np.array([[0.0, 1.0, -1.2, 100.0, -100.0]], np.float64))
    assert fed.dtype == np.int8 and fed.flags.c_contiguous
    assert fed.tolist() == [[3, 5, 1, 127, -128]]  # round(x / 0.5 + 3), clipped to int8
    np.testing.assert_array_equal(from_output(int8, fed), [[0.0, 1.0, -1.0, 62.0, -65.5]])
    # Unquantized tensors are cast, not scaled.
    plain = {"dtype": np.int32, "quantization": (0.0, 0)}
    assert to_input(plain, np.array([1.7])).tolist() == [1]
    values = np.array([7], np.int32)
    assert from_output(plain, values) is values


@pytest.mark.slow
def test_run_end_to_end_through_the_host_target(
    fw: TfliteFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    tiny_tflite: Tiny,
    tmp_path: Path,
) -> None:
    model = make_model({"tflite": "tiny.tflite", "reference": "ref.npz"}, format="tflite")
    [config] = fw.configurations(model, [])  # type: ignore[misc]
    files = {"files.tflite": str(tiny_tflite.model), "files.reference": str(tiny_tflite.reference)}
    ctx = make_ctx(model, config, files=files, workdir=str(tmp_path), iter=5, threads=1,
                   profile_ops=True)
    results = _run(ctx, fw)
    assert all(r.ok for r in results), results[0].stderr[-2000:]
    parsed = fw.parse(results)
    assert len([s for s in parsed.samples if s.key == "NET latency"]) == 5
    details = parsed.details
    assert details["runtime"] == "litert"
    assert details["runtime_version"] == importlib.metadata.version("ai-edge-litert")
    assert (details["precision"], details["threads"], details["xnnpack"]) == ("fp32", 1, True)
    assert details["xnnpack_applied"] is True
    assert details["model_file"] == "tiny.tflite"
    # No per-op table, and the reason says so rather than leaving it empty.
    assert "per-operator profiler" in details["op_profile_unavailable"]
    assert not [s for s in parsed.samples if s.type != "NET"]
    # The reference's inputs (x, y) were bound by position to args_0, args_1.
    assert details["inputs"] == {"x": [[2, 8], "float32"], "y": [[2, 4], "float32"]}
    errors = {s.metric: s.value for s in parsed.samples if s.metric.startswith("error_")}
    assert errors["error_max_abs"] < 1e-5


@pytest.mark.slow
def test_without_xnnpack_outputs_keep_the_source_order(
    fw: TfliteFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    tiny_tflite: Tiny,
    tmp_path: Path,
) -> None:
    # Inputs named as the signature names them, listed out of order: bound by name.
    reference = load_reference(tiny_tflite.reference)
    swapped = tmp_path / "swapped.npz"
    save_reference(swapped, {"args_1": reference.inputs["y"], "args_0": reference.inputs["x"]},
                   reference.outputs)
    model = make_model({"tflite": "tiny.tflite", "reference": "swapped.npz"})
    files = {"files.tflite": str(tiny_tflite.model), "files.reference": str(swapped)}
    ctx = make_ctx(model, FrameworkConfig("tflite", {"xnnpack": False}), files=files,
                   workdir=str(tmp_path), iter=3)
    [invocation] = fw.invocations(ctx)
    dumped = tmp_path / "outputs.npz"
    parsed = _run_with(invocation, dump_outputs=str(dumped))
    assert parsed.details["xnnpack"] is False and parsed.details["xnnpack_applied"] is False
    # The runtime's default thread count: nothing was asked.
    assert parsed.details["threads"] is None
    with np.load(dumped) as got:
        outputs = [got[f"output.{i}"] for i in range(len(got.files))]
    # Exactly the torch outputs in the torch order ([2, 4] then [2, 1]), no pairing by size.
    assert [o.shape for o in outputs] == [(2, 4), (2, 1)]
    for actual, expected in zip(outputs, reference.outputs, strict=True):
        np.testing.assert_allclose(actual, expected, atol=1e-5)


@pytest.mark.slow
def test_int8_run_quantizes_the_int8_input(
    fw: TfliteFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    tiny_tflite: Tiny,
    tmp_path: Path,
) -> None:
    files = {"tflite": "tiny.tflite", "tflite_int8": "tiny.int8.tflite", "reference": "ref.npz"}
    model = make_model(files)
    configs = fw.configurations(model, [])
    assert configs == [DEFAULT, INT8]
    ctx = make_ctx(model, INT8, workdir=str(tmp_path), iter=3, threads=1, files={
        "files.tflite": str(tiny_tflite.model), "files.tflite_int8": str(tiny_tflite.int8),
        "files.reference": str(tiny_tflite.reference)})
    results = _run(ctx, fw)
    assert all(r.ok for r in results), results[0].stderr[-2000:]
    parsed = fw.parse(results)
    assert parsed.details["precision"] == "int8"
    assert parsed.details["model_file"] == "tiny.int8.tflite"
    stats = {s.metric: s.value for s in parsed.samples}
    # The converted model takes x as an int8 tensor (scale about 0.02): cast instead of
    # quantized, the outputs would be off by far more than quantization noise (~45 dB here).
    assert 0 < stats["error_max_abs"] < 0.2
    assert stats["sqnr"] > 30


@pytest.mark.slow
def test_inputs_come_from_the_model_when_nothing_gives_them(
    fw: TfliteFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    tiny_tflite: Tiny,
    tmp_path: Path,
) -> None:
    model = make_model({"tflite": "tiny.tflite"})
    ctx = make_ctx(model, DEFAULT, files={"files.tflite": str(tiny_tflite.model)},
                   workdir=str(tmp_path), iter=2, threads=2)
    [invocation] = fw.invocations(ctx)
    dumped = tmp_path / "outputs.npz"
    parsed = _run_with(invocation, dump_outputs=str(dumped))
    assert parsed.details["inputs"] == {"args_0": [[2, 8], "float32"],
                                        "args_1": [[2, 4], "float32"]}
    assert parsed.details["threads"] == 2
    with np.load(dumped) as got, np.load(tiny_tflite.seed0) as want:
        for i in range(2):
            np.testing.assert_allclose(got[f"output.{i}"], want[f"arr_{i}"], atol=1e-5)


@pytest.mark.slow
def test_twelve_outputs_come_back_in_source_order(
    fw: TfliteFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    tiny_tflite: Tiny,
    tmp_path: Path,
) -> None:
    # The signature lists output_0, output_1, output_10, output_11, output_2...: string order.
    model = make_model({"tflite": "twelve.tflite"})
    ctx = make_ctx(model, DEFAULT, files={"files.tflite": str(tiny_tflite.twelve)},
                   workdir=str(tmp_path), iter=1)
    dumped = tmp_path / "outputs.npz"
    _run_with(fw.invocations(ctx)[0], dump_outputs=str(dumped))
    with np.load(dumped) as got:
        assert [got[f"output.{i}"].shape for i in range(12)] == [(1, i + 1) for i in range(12)]


@pytest.mark.slow
def test_the_runner_process_loads_only_the_runner_and_this_backend(
    fw: TfliteFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    tiny_tflite: Tiny,
    tmp_path: Path,
) -> None:
    model = make_model({"tflite": "tiny.tflite"})
    ctx = make_ctx(model, DEFAULT, files={"files.tflite": str(tiny_tflite.model)},
                   workdir=str(tmp_path), iter=2, threads=1)
    [invocation] = fw.invocations(ctx)
    assert assert_runner_loads_only_its_backend(invocation, "tflite") > 0


# -- litert-benchmark, the CompiledModel benchmark ai-edge-litert installs ----------------------

# Captured from the real tool (ai-edge-litert, this machine) on a zoo-sized model.
LITERT_TEXT = """
========================================
 BENCHMARK RESULTS
========================================
Model initialization:  4.76 ms
Warmup (first):        0.97 ms
Warmup (avg):          0.53 ms (3 runs)
Inference (avg):       0.41 ms (20 runs)
Inference (min):       0.38 ms
Inference (max):       0.52 ms
Inference (median):    0.40 ms
Inference (std):       0.03 ms
Inference (p5):        0.38 ms
Inference (p95):       0.49 ms
Throughput:            17.18 MB/s
Fully accelerated:     True
========================================
"""
LITERT_JSON = json.dumps({
    "model": "/tmp/m.tflite", "model_size_mb": 2.5, "accelerators": ["CPU"],
    "signature": "serving_default", "fully_accelerated": True, "num_threads": 1,
    "latency": {"init_ms": 4.76, "warmup_first_ms": 0.97, "warmup_avg_ms": 0.53,
                "num_warmup_runs": 3, "avg_ms": 0.41, "min_ms": 0.38, "max_ms": 0.52,
                "median_ms": 0.40, "std_ms": 0.03, "p5_ms": 0.38, "p95_ms": 0.49,
                "num_runs": 20},
    "throughput_mb_s": 17.18}, indent=2)


@pytest.mark.parametrize("text", [LITERT_TEXT, LITERT_TEXT + LITERT_JSON], ids=["text", "json"])
def test_litert_benchmark_reports_are_read(fw: TfliteFramework, text: str) -> None:
    parsed = fw.parse([CommandResult(0, text, "INFO: noise", 0.1)])
    values = {s.key: (s.value, s.unit) for s in parsed.samples}
    assert values["NET latency"] == (0.41, "ms")
    assert values["NET load_time"] == (4.76, "ms") and values["NET first_inference"] == (0.97, "ms")
    [summary] = parsed.summaries
    assert (summary.key, summary.num_runs) == ("NET latency", 20)
    assert summary.values == {"mean": 0.41, "min": 0.38, "max": 0.52, "p50": 0.40,
                              "stdev": 0.03, "p5": 0.38, "p95": 0.49}
    assert parsed.details["tool"] == "litert-benchmark"
    assert parsed.details["latency_samples"] == "process_mean"
    assert parsed.details["fully_accelerated"] is True
    if "model_size_mb" in text:
        assert values["NET model_size"] == (2.5, "MB")
        assert parsed.details["accelerators"] == ["CPU"]


def test_litert_benchmark_reads_exponent_numbers() -> None:
    from benchlab.frameworks.native.litert_benchmark import parse_litert_benchmark

    text = (LITERT_TEXT
            .replace("Model initialization:  4.76 ms", "Model initialization:  4.76e+00 ms")
            .replace("Inference (min):       0.38 ms", "Inference (min):       1e-05 ms")
            .replace("Inference (p95):       0.49 ms", "Inference (p95):       4.9E-01 ms")
            .replace("Throughput:            17.18 MB/s", "Throughput:            1.718e+01 MB/s"))
    parsed = parse_litert_benchmark(text)
    values = {s.key: s.value for s in parsed.samples}
    assert values["NET load_time"] == pytest.approx(4.76)
    [summary] = parsed.summaries
    assert summary.values["min"] == pytest.approx(1e-05)
    assert summary.values["p95"] == pytest.approx(0.49)
    assert parsed.details["throughput_mb_s"] == pytest.approx(17.18)


def test_a_mean_under_litert_benchmarks_resolution_is_no_latency(fw: TfliteFramework) -> None:
    # What the real tool prints for a model faster than 5 us (issue 24: a tiny model's cell
    # read 0.0 ms on some runs and 0.01 ms on others).
    text = LITERT_TEXT.replace("0.41 ms (20 runs)", "0.00 ms (20 runs)")
    parsed = fw.parse([CommandResult(0, text, "", 0.1)])
    keys = [s.key for s in parsed.samples]
    assert "NET latency" not in keys and "NET load_time" in keys
    assert parsed.summaries == ()
    [info] = parsed.infos
    assert "0.00 ms" in info and "0.01 ms resolution" in info


def _litert_tool() -> str:
    tool = Path(sys.executable).parent / "litert-benchmark"
    if not tool.exists():
        pytest.skip("litert-benchmark is not installed (ai-edge-litert)")
    return str(tool)


@pytest.mark.slow
def test_litert_benchmark_runs_in_place_of_the_runner(
    fw: TfliteFramework, make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext], tiny_tflite: Tiny, tmp_path: Path,
) -> None:
    tool = _litert_tool()
    model = make_model({"tflite": "wide.tflite"}, format="tflite")
    config = FrameworkConfig("tflite", {"binary": tool})
    ctx = make_ctx(model, config, files={"files.tflite": str(tiny_tflite.wide)},
                   workdir=str(tmp_path), iter=25, warmup=2, threads=1)
    [invocation] = fw.invocations(ctx)
    assert "--num_runs 25" in invocation.argv and "--result_json /dev/stdout" in invocation.argv
    results = _run(ctx, fw)
    assert all(r.ok for r in results), results[0].stderr[-2000:]
    parsed = fw.parse(results)
    assert [s.key for s in parsed.samples if s.key == "NET latency"] == ["NET latency"]
    [summary] = parsed.summaries
    assert summary.num_runs == 25 and set(summary.values) >= {"mean", "p50", "p95"}
    assert parsed.details["tool"] == "litert-benchmark"
    assert parsed.details["threads"] == 1 and parsed.details["warmup_runs"] == 2


@pytest.mark.slow
def test_litert_benchmark_results_appear_in_the_run_table(tiny_tflite: Tiny,
                                                          tmp_path: Path) -> None:
    import benchlab
    from benchlab.report.matrix import matrix_cells

    tool = _litert_tool()
    spec = {"model": {"name": "wide", "format": "tflite",
                      "files": {"tflite": {"location": str(tiny_tflite.wide), "md5": None}}},
            "tests": [{"identifier": "default", "iter": 20, "repeat": 2}]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    results = list(benchlab.run([tmp_path / "spec.json"], frameworks=[f"tflite:binary={tool}"],
                                db=tmp_path / "r.db", cache_dir=tmp_path / "cache"))
    assert [r.status for r in results] == [benchlab.Status.OK], results[0].error
    [cell] = matrix_cells(results)
    assert cell.label.startswith("tflite[") and cell.p50 is not None and cell.p50 > 0
    assert cell.load is not None
    assert len(results[0].samples_of("NET latency")) == 2  # one mean per process


def test_a_faipep_tflite_spec_runs_its_commands_and_is_read_as_benchmark_model(
    tmp_path: Path
) -> None:
    """FAI-PEP's tflite specs call ``{program}`` (benchmark_model) themselves: the job is a
    tflite job, the command runs as written, and benchmark_model's report is parsed."""
    import benchlab
    from benchlab.schema.result import Status

    sample = Path(__file__).parent / "data/native/benchmark_model_plain.txt"
    program = tmp_path / "benchmark_model"
    program.write_text(f"#!/bin/sh\necho \"args: $*\" >&2\ncat {sample}\n")
    program.chmod(0o755)
    (tmp_path / "m.tflite").write_bytes(b"TFL3 not a real model")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "model": {"name": "mobilenet", "format": "tflite", "files": {
            "graph": {"filename": "m.tflite", "location": "m.tflite", "md5": None}}},
        "tests": [{"identifier": "t", "iter": 50, "warmup": 1, "metric": "delay",
                   "commands": ["{program} --graph={files.graph} --warmup_runs={warmup} "
                                "--num_runs={iter} --num_threads=4"]}],
    }))
    plan = benchlab.plan_sweep(spec, cache_dir=tmp_path / "cache")
    assert [job.identity.framework for job in plan.jobs] == ["tflite"]
    [result] = benchlab.run(spec, db=tmp_path / "r.db", cache_dir=tmp_path / "cache",
                            string_map={"program": str(program)})
    assert result.status is Status.OK, (result.error, result.stderr_tail)
    assert result.identity.framework == "tflite"
    assert "NET latency" in result.summaries or result.details.get("reported_summaries")
