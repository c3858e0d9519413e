"""``benchlab.outputs``: a backend's raw outputs, on the host and on remote targets.

On the ssh board (a real sshd on loopback) and the stand-in phone (the real adb client and
server), the model and inputs are pushed, the runner runs there, its outputs come back, and
the errors against the reference are computed on the host, as they are for the host.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import benchlab
from benchlab.errors import UsageError
from benchlab.runner.accuracy import save_reference

from benchlab_standin import StandinPhone
from benchlab_standin.adbserver import AdbServer
from benchlab_standin.board import LoopbackBoard


def _expected(onnx_file: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.fixture()
def spec(tmp_path: Path, onnx_file: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """A spec of the tiny ONNX model with a reference file: inputs and outputs off by 1e-3."""
    x = np.random.default_rng(3).standard_normal((2, 8)).astype(np.float32)
    expected = _expected(onnx_file, x)
    shutil.copy(onnx_file, tmp_path / "tiny.onnx")
    save_reference(tmp_path / "ref.npz", {"x": x}, [expected + np.float32(1e-3)], "regression")
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({
        "model": {"name": "tiny", "format": "onnx", "files": {
            "model": {"location": "tiny.onnx", "md5": None},
            "reference": {"location": "ref.npz", "md5": None}}},
        "tests": [{"identifier": "t", "inputs": {"x": {"shapes": [[2, 8]]}}}],
    }))
    return path, x, expected


def _check(got: benchlab.ModelOutputs, x: np.ndarray, expected: np.ndarray) -> None:
    assert np.array_equal(got.inputs["x"], x)
    [out] = got.outputs
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
    # The errors are against the reference (the outputs plus 1e-3), computed on the host.
    assert got.errors["error_max_abs"] == pytest.approx(1e-3, rel=1e-2)
    assert got.as_torch()[0].shape == (2, 4)


def test_outputs_on_the_host(spec: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path,
                             zoo_cache_dir: Path) -> None:
    path, x, expected = spec
    got = benchlab.outputs(path, "onnxruntime", cache_dir=tmp_path / "cache")
    _check(got, x, expected)
    # A zoo model by name: its spec, file and reference from the zoo's cache.
    zoo = benchlab.outputs("mlp", "onnxruntime", cache_dir=zoo_cache_dir)
    assert zoo.model == "mlp" and zoo.outputs[0].shape == (16, 10)
    assert zoo.errors["sqnr"] > 60
    # Other inputs than the reference's: outputs for those, nothing to compare against.
    other = np.ones((2, 8), np.float32)
    mine = benchlab.outputs(path, "onnxruntime", inputs={"x": other}, cache_dir=tmp_path / "c")
    np.testing.assert_allclose(mine.outputs[0], _expected(path.parent / "tiny.onnx", other),
                               rtol=1e-6)
    assert mine.errors == {} and mine.reference is None


@pytest.mark.slow
def test_outputs_on_an_ssh_board(spec: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path,
                                 board: LoopbackBoard) -> None:
    path, x, expected = spec
    got = benchlab.outputs(path, "onnxruntime", cache_dir=tmp_path / "cache",
                           target=f"{board.target_text},python={sys.executable}")
    _check(got, x, expected)


@pytest.mark.slow
def test_outputs_on_a_phone(spec: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path,
                            phone: tuple[StandinPhone, AdbServer]) -> None:
    path, x, expected = spec
    standin, server = phone
    target = f"adb:server_port={server.port}"
    # The Python binding needs the phone's Python (runner=auto would run benchlab's own
    # runner there: tests/targets/test_arm_phone.py).
    with pytest.raises(UsageError, match="has no Python"):
        benchlab.outputs(path, "onnxruntime:runner=python", cache_dir=tmp_path / "cache",
                         target=target)
    got = benchlab.outputs(path, "onnxruntime", cache_dir=tmp_path / "cache",
                           target=f"{target},python={sys.executable}")
    _check(got, x, expected)
    # The work directory on the phone is gone afterwards.
    assert not any((standin.root / "data/local/tmp").rglob("outputs.npz"))
