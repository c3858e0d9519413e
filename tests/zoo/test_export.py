"""Tests of the zoo exporter: ``python -m benchlab.exporting.job '<json job>'`` as a real process.

The convnet job runs once per module (about 40 s on two cores: it exports to every default
format plus the portable ExecuTorch one) and every file it writes is then run in its own
runtime and compared with the reference the exporter wrote. AOTInductor is left out: it
compiles C++ for about a minute.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import machine_facts
import numpy as np
import onnx
import pytest
from bounded import run_bounded

from .int8_baseline import check_int8_sqnr

from benchlab.runner.accuracy import Reference, error_stats, load_reference, to_arrays
from benchlab.exporting import quantize
from benchlab.exporting.formats import DEFAULT_FORMATS, FORMAT_FILES

pytestmark = pytest.mark.slow

CONVNET_FORMATS = [*DEFAULT_FORMATS, "pte_portable", "no_such_format"]


@dataclass
class Job:
    proc: subprocess.CompletedProcess[str]
    out_dir: Path

    @property
    def result(self) -> dict[str, Any]:
        return json.loads(self.proc.stdout.strip().splitlines()[-1])


def run_export(out_dir: Path, **job: Any) -> Job:
    """Run the exporter on one job (defaults filled in) and return the finished process."""
    full = {"name": "m", "entry": None, "onnx_resource_path": None, "task": "classification",
            "input_shapes": [], "input_dtypes": [], "formats": [], "out_dir": str(out_dir),
            "seed": 0, **job}
    proc = run_bounded(
        [sys.executable, "-m", "benchlab.exporting.job", json.dumps(full)], limit_s=540)
    return Job(proc, out_dir)


def _inputs(ref: Reference) -> list[np.ndarray]:
    return list(ref.inputs.values())


def run_file(key: str, path: str, ref: Reference) -> list[np.ndarray]:
    """Run one exported file on the reference inputs in the runtime it is meant for."""
    inputs = _inputs(ref)
    if key in ("torchscript", "pt2", "pte_xnnpack", "pte_xnnpack_int8", "pte_portable"):
        import torch

        args = [torch.from_numpy(a) for a in inputs]
        if key == "torchscript":
            return to_arrays(torch.jit.load(path)(*args))
        if key == "pt2":
            return to_arrays(torch.export.load(path).module()(*args))
        from executorch.runtime import Runtime

        method = Runtime.get().load_program(path).load_method("forward")
        return to_arrays(method.execute(args))
    if key in ("onnx", "onnx_int8"):
        import onnxruntime as ort

        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return list(session.run(None, dict(zip(names, inputs, strict=True))))
    if key == "tflite":
        from ai_edge_litert.interpreter import Interpreter

        interpreter = Interpreter(model_path=path, num_threads=1)
        interpreter.allocate_tensors()
        for detail, array in zip(interpreter.get_input_details(), inputs, strict=True):
            interpreter.set_tensor(detail["index"], array.astype(detail["dtype"]))
        interpreter.invoke()
        return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
    if key == "openvino":
        import openvino as ov

        compiled = ov.Core().compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        return to_arrays(compiled(inputs))
    raise AssertionError(f"no runtime for {key}")


@pytest.fixture(scope="module")
def convnet(tmp_path_factory: pytest.TempPathFactory) -> Job:
    out = tmp_path_factory.mktemp("convnet")
    return run_export(out, name="convnet", entry="benchlab.zoo.models:convnet",
                      formats=CONVNET_FORMATS)


@pytest.fixture(scope="module")
def convnet_errors(convnet: Job) -> dict[str, dict[str, float]]:
    """error_stats of every produced model file against the reference."""
    files = convnet.result["files"]
    ref = load_reference(files["reference"])
    return {
        key: error_stats(run_file(key, path, ref), ref.outputs, ref.task)
        for key, path in files.items()
        if key not in ("reference", "openvino_bin") and not key.startswith("simulated_")
    }


def test_convnet_writes_every_format(convnet: Job) -> None:
    assert convnet.proc.returncode == 0, convnet.proc.stderr[-3000:]
    result = convnet.result
    assert set(result) == {"files", "failed", "metadata", "seconds"}
    expected = {key for fmt in CONVNET_FORMATS if fmt in FORMAT_FILES for key in FORMAT_FILES[fmt]}
    assert set(result["files"]) == expected | {"reference"}
    for path in result["files"].values():
        assert Path(path).is_absolute() and Path(path).stat().st_size > 0
    assert result["files"]["pte_xnnpack"].endswith("convnet.xnnpack.pte")
    assert result["files"]["openvino_bin"].endswith("convnet.bin")
    assert list(result["failed"]) == ["no_such_format"]
    assert result["failed"]["no_such_format"].startswith("ValueError: unknown format")
    assert set(result["seconds"]) == set(CONVNET_FORMATS) - {"no_such_format"}


def test_convnet_metadata(convnet: Job) -> None:
    meta = convnet.result["metadata"]
    assert meta == {
        "params": 279466,
        "flops": meta["flops"],
        "task": "classification",
        "input_shapes": [[1, 3, 128, 128]],
        "input_dtypes": ["float32"],
        "output_shapes": [[1, 10]],
        "inputs": "random",  # seeded random sets: no user data was given
    }
    assert 2.3e8 < meta["flops"] < 2.4e8  # 2 x multiply-adds of five convs and one linear


def test_reference_holds_eager_output(convnet: Job) -> None:
    import torch

    from benchlab.zoo.models import convnet as build

    ref = load_reference(convnet.result["files"]["reference"])
    assert ref.task == "classification"
    assert list(ref.inputs) == ["input0"] and ref.inputs["input0"].dtype == np.float32
    with torch.no_grad():
        expected = build()(torch.from_numpy(ref.inputs["input0"])).numpy()
    np.testing.assert_allclose(ref.outputs[0], expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("key", ["onnx_int8", "pte_xnnpack_int8"])
def test_int8_files_come_with_their_simulated_outputs(convnet: Job, key: str) -> None:
    files = convnet.result["files"]
    ref = load_reference(files["reference"])
    simulated = load_reference(files[f"simulated_{key}"])
    assert Path(files[f"simulated_{key}"]).name == (
        "convnet.int8.simulated.npz" if key == "onnx_int8" else
        "convnet.xnnpack-int8.simulated.npz")
    # The reference's input sets, in its order, so the runner pairs them set by set.
    assert simulated.task == ref.task and len(simulated.more) == len(ref.more) == 7
    for (ins, outs), (ref_ins, ref_outs) in zip([(simulated.inputs, simulated.outputs),
                                                 *simulated.more],
                                                [(ref.inputs, ref.outputs), *ref.more]):
        assert ins.keys() == ref_ins.keys()
        assert all(np.array_equal(ins[k], ref_ins[k]) for k in ins)
        stats = error_stats(outs, ref_outs)
        assert 0 < stats["error_l2_rel"] < 0.05, stats  # quantized, and close


@pytest.mark.parametrize("key", ["torchscript", "pt2", "onnx", "tflite", "pte_xnnpack",
                                 "pte_portable", "openvino"])
def test_fp32_files_match_reference(convnet_errors: dict[str, dict[str, float]], key: str) -> None:
    assert convnet_errors[key]["error_max_abs"] < 1e-4, convnet_errors[key]


@pytest.mark.parametrize("key", ["onnx_int8", "pte_xnnpack_int8"])
def test_int8_files_are_close_but_not_exact(
    convnet_errors: dict[str, dict[str, float]], key: str
) -> None:
    stats = convnet_errors[key]
    assert stats["error_max_abs"] > convnet_errors["onnx"]["error_max_abs"]
    assert stats["cosine_similarity"] > 0.9, stats


@pytest.fixture
def update_baseline(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-int8-baseline"))


@pytest.mark.parametrize("key", ["onnx_int8", "pte_xnnpack_int8"])
def test_int8_accuracy_is_the_recorded_one(
    convnet_errors: dict[str, dict[str, float]], key: str, update_baseline: bool,
    machine_case: Callable[[str], None],
) -> None:
    if key == "onnx_int8":
        dot = "has" if machine_facts.has_int8_dot_product() else "lacks"
        machine_case(f"this CPU {dot} int8 dot products; ORT's 7-bit weights make that moot, "
                     "so the recorded SQNR applies")
    check_int8_sqnr("convnet", key, convnet_errors[key]["sqnr"], update=update_baseline)


DICT_MODEL = textwrap.dedent('''
    import torch
    from torch import nn

    class DictOut(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(32, 64)
            self.b = nn.Linear(64, 8)

        def forward(self, x):
            return {"logits": self.b(torch.relu(self.a(x)))}

    def build():
        torch.manual_seed(0)
        module = DictOut().eval()
        module.example_shapes = [[4, 32]]
        return module
''')


def test_one_failing_exporter_loses_nothing_else(tmp_path: Path, update_baseline: bool) -> None:
    # torch.jit.trace rejects dict outputs; torch.onnx.export flattens them.
    (tmp_path / "dictmodel.py").write_text(DICT_MODEL)
    job = run_export(tmp_path / "out", name="dm", entry=f"{tmp_path}/dictmodel.py:build",
                     formats=["torchscript", "onnx_int8"])
    assert job.proc.returncode == 0, job.proc.stderr[-3000:]
    result = job.result
    assert list(result["failed"]) == ["torchscript"]
    assert result["failed"]["torchscript"].startswith("RuntimeError: ")
    assert len(result["failed"]["torchscript"]) <= 300
    assert set(result["files"]) == {"reference", "onnx_int8", "simulated_onnx_int8"}
    # The fp32 ONNX file was only a step towards int8: it is not left behind.
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "dm.int8.onnx", "dm.int8.simulated.npz", "dm.reference.npz"]
    ref = load_reference(result["files"]["reference"])
    stats = error_stats(run_file("onnx_int8", result["files"]["onnx_int8"], ref), ref.outputs)
    # Dynamic quantization of two Gemms with 7-bit weights: about 38 dB on any x86-64 CPU.
    # With 8-bit weights a CPU without VNNI saturates and gives about 11-16 dB (cosine 0.96).
    assert quantize.REDUCE_RANGE
    check_int8_sqnr("dictmodel", "onnx_int8", stats["sqnr"], update=update_baseline)


def test_bad_entry_exits_nonzero_with_reason(tmp_path: Path) -> None:
    job = run_export(tmp_path, entry="benchlab.zoo.models:no_such_model", formats=["onnx"])
    assert job.proc.returncode == 1
    assert "cannot build benchlab.zoo.models:no_such_model: AttributeError" in job.proc.stderr
    assert job.proc.stdout.strip() == ""


def test_malformed_job_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "benchlab.exporting.job", '{"name": "x"}'],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "bad job: missing" in proc.stderr


def test_onnx_only_model(tmp_path: Path) -> None:
    # ONNX's own light SqueezeNet: IR 3, opset 9, weights made by ConstantOfShape.
    source = Path(onnx.__file__).parent / "backend/test/data/light/light_squeezenet.onnx"
    job = run_export(tmp_path / "out", name="sq", onnx_resource_path=str(source),
                     input_shapes=[[1, 3, 224, 224]], input_dtypes=["float32"],
                     formats=["onnx", "onnx_int8", "openvino", "tflite"])
    assert job.proc.returncode == 0, job.proc.stderr[-3000:]
    result = job.result
    # ONNX Runtime's fp32 outputs of the file are its reference, and the int8 recipe's exact
    # outputs on the reference's inputs come with the int8 file.
    assert set(result["files"]) == {"onnx", "onnx_int8", "openvino", "openvino_bin",
                                    "reference", "simulated_onnx_int8"}
    assert result["failed"]["tflite"].startswith("NeedsTorchModel: ")
    meta = result["metadata"]
    assert meta["output_shapes"] == [[1, 1000, 1, 1]]
    assert meta["params"] == 1235496 and 6.9e8 < meta["flops"] < 7.0e8
    assert Path(result["files"]["onnx"]).read_bytes() == source.read_bytes()
    # The light graphs' constant weights make every class score equal (a uniform softmax),
    # so accuracy means nothing here: check that each conversion runs and keeps the shape.
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    ref = Reference(inputs={"data_0": x}, outputs=[])
    for key in ("onnx", "onnx_int8", "openvino"):
        (output,) = run_file(key, result["files"][key], ref)
        assert output.size == 1000 and np.isfinite(output).all(), key
