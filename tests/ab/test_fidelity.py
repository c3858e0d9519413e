"""Fidelity of the interleaved modes, model files as sides, and a compare that compares nothing.

With real ONNX Runtime processes: two model files compared in one process, and the two sides
sharing one intra-op pool there (counted as OS threads, not taken from the report's word).
With the spin backend's ``crowded`` knob (a side that runs slower while a neighbour is alive,
by a known factor): an interleaved mode that does not run the sides as they run alone is left
for process pairs, with the reason.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import benchlab
from benchlab.ab import CompareSettings, Side, compare_jobs
from benchlab.schema.comparison import Mode
from benchlab.ab.sides import make_side
from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import UsageError
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.host import HostTarget
from tests.ab.test_inprocess import _jobs

pytest.importorskip("onnxruntime")


def write_chain(path: Path, matmuls: int, width: int = 256) -> Path:
    """``matmuls`` MatMuls by the identity: the same outputs, work proportional to the count."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    eye = numpy_helper.from_array(np.eye(width, dtype=np.float32), "eye")
    names = ["x"] + [f"h{i}" for i in range(matmuls - 1)] + ["y"]
    nodes = [helper.make_node("MatMul", [names[i], "eye"], [names[i + 1]])
             for i in range(matmuls)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, width])], [eye])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def write_spec(path: Path, model: Path, iterations: int = 20) -> Path:
    path.write_text(json.dumps({
        "model": {"name": "chain", "format": "onnx", "framework": "onnxruntime",
                  "files": {"model": {"location": str(model), "md5": None}}},
        "tests": [{"identifier": "default", "warmup": 2, "iter": iterations,
                   "inputs": {"x": {"shapes": [[64, 256]]}}}],
    }))
    return path


def test_two_model_files_are_compared_in_one_process(tmp_path: Path) -> None:
    one, eight = write_chain(tmp_path / "one.onnx", 1), write_chain(tmp_path / "eight.onnx", 8)
    comparison = benchlab.compare(
        [write_spec(tmp_path / "spec.json", one)],
        control=Side("one", model=one), treatment=Side("eight", model=eight),
        db=tmp_path / "r.db", cache_dir=tmp_path / "cache",
        settings=CompareSettings(looks=(4,), verify=False, min_effect=0.1,
                                 fidelity_tolerance=None))
    (latency,) = comparison.metrics
    assert latency.mode is Mode.IN_PROCESS and comparison.notes == ()
    # Eight times the MatMuls: far slower, side by side (a huge effect, not a timing bound).
    assert latency.estimate.change > 1.0
    assert {f.side for f in latency.fidelity} == {"control", "treatment"}
    assert latency.regime["control"]["thread_pool"] == "global"


def test_a_model_file_of_another_format_is_refused_by_name(tmp_path: Path) -> None:
    one = write_chain(tmp_path / "one.onnx", 1)
    other = tmp_path / "model.tflite"
    other.write_bytes(b"not used")
    comparison = benchlab.compare(
        [write_spec(tmp_path / "spec.json", one)],
        control=Side("one", model=one), treatment=Side("other", model=other),
        db=tmp_path / "r.db", cache_dir=tmp_path / "cache",
        settings=CompareSettings(looks=(4,), verify=False))
    assert comparison.metrics == () and comparison.exit_code == 1
    (reason,) = comparison.skipped
    assert "no model file of model.tflite's format (.tflite)" in reason
    with pytest.raises(UsageError, match="no such file"):
        make_side("control", model=tmp_path / "missing.onnx")


def _threads(tmp_path: Path, options: dict) -> int:
    tmp_path.mkdir()
    model = write_chain(tmp_path / "m.onnx", 2)
    config = FrameworkConfig("onnxruntime", {"intra_op_threads": 2, **options})
    comparison = benchlab.compare(
        [write_spec(tmp_path / "spec.json", model, iterations=4)],
        control=Side("a", framework=config), treatment=Side("b", framework=config),
        db=tmp_path / "r.db", cache_dir=tmp_path / "cache",
        settings=CompareSettings(looks=(2,), verify=False, fidelity_tolerance=None))
    (latency,) = comparison.metrics
    assert latency.mode is Mode.IN_PROCESS
    pool = options.get("thread_pool", "global")
    assert latency.regime["control"]["thread_pool"] == pool
    assert latency.regime["treatment"]["thread_pool"] == pool
    return latency.regime["process_threads"]


def test_onnxruntime_sides_share_one_intra_op_pool(tmp_path: Path) -> None:
    shared = _threads(tmp_path / "shared", {})
    apart = _threads(tmp_path / "apart", {"thread_pool": "session"})
    # Two threads each: one pool has one worker beside the caller, two pools have two.
    assert apart == shared + 1


def _crowded(tmp_path: Path, crowded: float):
    side = Side("A", framework=FrameworkConfig("spin", {"crowded": crowded}))
    again = Side("B", framework=FrameworkConfig("spin", {"crowded": crowded}))
    return compare_jobs(_jobs(tmp_path, iterations=10), side, again, HostTarget(),
                        ArtifactCache(tmp_path / "cache"),
                        CompareSettings(looks=(6,), verify=False, min_effect=0.5))


def test_a_mode_that_slows_the_sides_leaves_the_job_to_process_pairs(tmp_path: Path) -> None:
    comparison = _crowded(tmp_path, crowded=2.0)  # three times the work beside a neighbour
    assert {m.mode for m in comparison.metrics} == {Mode.PROCESS_PAIRS}
    (note,) = comparison.notes
    assert "in-process did not run the sides as they run alone" in note
    assert "control" in note and "its solo latency (tolerance ±5%)" in note
    ratio = float(note.split("control ")[1].split("×")[0])
    assert ratio > 2.0  # the knob's factor, 3, measured side by side


def test_fidelity_is_reported_in_every_format(tmp_path: Path) -> None:
    from benchlab.report.ab import comparison_json, comparison_markdown, comparison_table
    from benchlab.report.ab_html import comparison_html

    comparison = compare_jobs(_jobs(tmp_path, iterations=10), Side("A"), Side("B"),
                              HostTarget(), ArtifactCache(tmp_path / "cache"),
                              CompareSettings(looks=(4,), verify=False, min_effect=0.5,
                                              fidelity_tolerance=None))
    (latency,) = comparison.metrics
    assert latency.mode is Mode.IN_PROCESS
    fidelity = {f.side: f for f in latency.fidelity}
    assert set(fidelity) == {"control", "treatment"}
    assert all(f.sessions == 4 and math.isfinite(f.ratio) for f in fidelity.values())
    data = json.loads(comparison_json(comparison))
    assert {f["side"] for f in data["metrics"][0]["fidelity"]} == {"control", "treatment"}
    assert all("faithful" in f for f in data["metrics"][0]["fidelity"])
    described = fidelity["control"].describe()
    assert described in comparison_markdown(comparison)
    assert described in comparison_html(comparison)
    # The terminal's table has it with --wide (the lines under the table say it anyway).
    assert "fidelity" in [c.header for c in comparison_table(comparison, wide=True).columns]
    assert "fidelity" not in [c.header for c in comparison_table(comparison).columns]


def test_a_compare_that_compares_nothing_exits_non_zero(tmp_path: Path) -> None:
    spec = tmp_path / "odd.json"
    spec.write_text(json.dumps({
        "model": {"name": "odd", "format": "weird",
                  "files": {"model": {"location": "m.weird", "md5": None}}},
        "tests": [{"identifier": "default"}]}))
    (tmp_path / "m.weird").write_bytes(b"\0")
    out = subprocess.run(
        [sys.executable, "-m", "benchlab", "compare", str(spec), "--control-config",
         "onnxruntime", "--treatment-config", "onnxruntime", "--db", str(tmp_path / "r.db"),
         "--json", str(tmp_path / "v.json"), "-q"],
        capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "odd" in out.stderr and "skipped" in out.stderr
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["compared_nothing"] is True and verdict["exit_code"] == 1


def test_sides_that_name_their_model_by_placeholder_compare_in_process(tmp_path: Path) -> None:
    one, eight = write_chain(tmp_path / "one.onnx", 1), write_chain(tmp_path / "eight.onnx", 8)
    spec = write_spec(tmp_path / "spec.json", one)
    data = json.loads(spec.read_text())
    data["model"]["files"]["model"].update(location="{program}", filename="model.onnx")
    spec.write_text(json.dumps(data))
    comparison = benchlab.compare(
        [spec], control=make_side("control", program=str(one)),
        treatment=make_side("treatment", program=str(eight)),
        db=tmp_path / "r.db", cache_dir=tmp_path / "cache",
        settings=CompareSettings(looks=(4,), verify=False, min_effect=0.1,
                                 fidelity_tolerance=None))
    assert comparison.failed == ()
    (latency,) = comparison.metrics
    assert latency.mode is Mode.IN_PROCESS and latency.estimate.change > 1.0
