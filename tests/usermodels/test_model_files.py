"""Models that are files, and models no exporter takes: an ONNX file made here reaches ONNX
Runtime fp32/int8 and OpenVINO with accuracy; a model with data-dependent control flow gets
one reason per format, naming its line, and still runs eager; bad input stops the sweep with
exit 2 and a message naming the model and what is wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from tiny_models import write_onnx

import benchlab
from benchlab.cli.commands import main
from benchlab.report.matrix import matrix_cells
from benchlab.report.terminal import result_notes
from benchlab.schema.result import Status

from .nets import BROKEN, GATE, GATE_BRANCH_LINE, MYNET, write

pytestmark = pytest.mark.slow
QUICK = benchlab.TestOverrides(iter=3, warmup=1, repeat=1, min_time=0)


def test_an_onnx_file_reaches_onnx_runtime_int8_and_openvino_with_accuracy(tmp_path: Path
                                                                           ) -> None:
    model = write_onnx(tmp_path / "tiny.onnx")  # its batch dimension is symbolic: give it
    results = benchlab.run(model=str(model), inputs=["x=2x8"],
                           frameworks=["onnxruntime", "openvino", "pytorch"],
                           db=tmp_path / "r.db", cache_dir=tmp_path / "cache", overrides=QUICK)
    cells = {c.label: c for c in matrix_cells(results)}
    assert set(cells) == {"onnxruntime", "onnxruntime[int8]", "openvino[f32]"}
    assert all(r.status is Status.OK for r in results)
    # The reference is ONNX Runtime's fp32 output of the file itself.
    assert cells["onnxruntime"].error_max_abs == 0 and cells["openvino[f32]"].sqnr > 90
    assert 15 < cells["onnxruntime[int8]"].sqnr < 80
    assert "tiny @ pytorch" in dict(results.skipped)  # an ONNX file has no PyTorch module
    random_note = "tiny: int8 calibrated on seeded random inputs says little about accuracy"
    assert any(note.startswith(random_note) for note in result_notes(list(results)))
    # The user's own input sets: calibration and accuracy on them, and no such note.
    sets = np.random.default_rng(5).standard_normal((10, 2, 8)).astype(np.float32)
    np.savez(tmp_path / "sets.npz", x=sets)
    again = benchlab.run(model=str(model), inputs=["x=2x8"], data=tmp_path / "sets.npz",
                         frameworks=["onnxruntime"], db=tmp_path / "r.db",
                         cache_dir=tmp_path / "cache", overrides=QUICK)
    assert all(r.model_info["inputs"] == "data" and r.ok for r in again)
    assert not any(note.startswith(random_note) for note in result_notes(list(again)))


def test_a_model_no_exporter_takes_says_why_per_format_and_still_runs_eager(tmp_path: Path
                                                                            ) -> None:
    write(tmp_path, "gate.py", GATE)
    results = benchlab.run(model=f"{tmp_path}/gate.py:build", inputs=["2x16"],
                           frameworks=["pytorch", "onnxruntime", "executorch"],
                           db=tmp_path / "r.db", cache_dir=tmp_path / "cache", overrides=QUICK)
    skipped = dict(results.skipped)
    for fmt in ("pt2", "onnx", "onnx_int8", "pte_xnnpack", "pte_xnnpack_int8"):
        reason = skipped[f"gate @ {fmt} export"]
        # One line, the converter's own words, the user's line — never a traceback.
        assert "\n" not in reason and "Traceback" not in reason, reason
        assert reason.endswith(f"(at gate.py:{GATE_BRANCH_LINE})"), reason
        assert "data-dependent" in reason or "GuardOnDataDependent" in reason, reason
    # The one line is cut from the converters' full output, which is kept.
    log = (tmp_path / "cache" / "export-logs" / "gate.log").read_text()
    assert "GuardOnDataDependentSymNode" in log and "Traceback" in log
    ok = {c.label for c in matrix_cells(results) if c.status == "ok"}
    assert "pytorch[eager]" in ok and "pytorch[torchscript]" in ok  # tracing takes one branch
    assert all(r.status is Status.OK for r in results)


@pytest.mark.parametrize("given, words", [
    (["--model", "{dir}/broken.py:build"],
     "broken.py:build: the factory raised RuntimeError: weights.pt is missing (at broken.py:3)"),
    (["--model", "{dir}/mynet.py:build", "--input", "1x5x32x32"], "fails on inputs [[1, 5, 32, 32]]"),
    (["--model", "{dir}/mynet.py:build"], "no input shapes"),
    (["--model", "{dir}/fake.tflite"], "fake.tflite: not a LiteRT file"),
    (["--model", "{dir}/fake.gguf"], "fake.gguf: not a llama.cpp file"),
    (["--model", "{dir}/fake.onnx"], "cannot load"),
    (["--model", "{dir}/bert"], "no weights"),
    (["--model", "{dir}/mynet.py:build", "--input", "1x3x32x32", "--inputs", "{dir}/sets.npz"],
     "cannot read input data"),
])
def test_bad_input_names_the_model_and_what_is_wrong(tmp_path: Path, given: list[str],
                                                     words: str, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "broken.py", BROKEN)
    write(tmp_path, "mynet.py", MYNET.format(seed=0))
    (tmp_path / "fake.tflite").write_bytes(b"\0" * 64)
    (tmp_path / "fake.gguf").write_bytes(b"GGML" + b"\0" * 60)
    (tmp_path / "fake.onnx").write_text("not protobuf")
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (tmp_path / "sets.npz").write_bytes(b"PK not numpy")
    args = [a.format(dir=tmp_path) for a in given]
    # The console script's own entry point: its exit status and its one-line error.
    monkeypatch.setattr(sys, "argv", ["benchlab", "run", *args, "--db", str(tmp_path / "r.db"),
                                      "--cache-dir", str(tmp_path / "cache"), "-q"])
    with pytest.raises(SystemExit) as stopped:
        main()
    err = capsys.readouterr().err
    assert stopped.value.code == 2, err
    assert words in " ".join(err.split()), err
    assert "Traceback" not in err and not (tmp_path / "r.db").exists()  # nothing ran
