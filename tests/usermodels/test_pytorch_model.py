"""Your PyTorch model on every runtime: through ``--model file.py:factory``, through a spec whose
entry names no file, and through ``benchlab.run(model=module)`` — real exports, real runtimes,
accuracy against the model's own eager outputs. A second run exports nothing; an edited weight
exports again."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import benchlab
from benchlab.cli.commands import app
from benchlab.report.matrix import Cell, config_label, matrix_cells
from benchlab.schema.result import Status
from benchlab.store import open_store

from .nets import MYNET, write

#: Every configuration `-f all` gives a forward-pass model here (README's test command installs
#: every runtime): fp32 and int8 where the runtime has both.
EVERY = {"pytorch[eager]", "pytorch[torchscript]", "pytorch[export]", "onnxruntime",
         "onnxruntime[int8]", "openvino[f32]", "tflite", "executorch[xnnpack]",
         "executorch[xnnpack,int8]"}
QUICK = ["--iter", "3", "--warmup", "1", "--repeat", "1", "--min-time", "0"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("yourmodel")
    write(folder, "mynet.py", MYNET.format(seed=0))
    return folder


def _index(work: Path) -> bytes:
    return (work / "cache" / "zoo-index.json").read_bytes()


def _cells(db: Path) -> dict[str, Cell]:
    with open_store(db) as store:
        results = store.results()  # one run per database here
    assert all(r.status is Status.OK for r in results), [(r.identity.label, r.error)
                                                         for r in results if not r.ok]
    return {cell.label: cell for cell in matrix_cells(results)}


def _check_every_runtime(cells: dict[str, Cell], expected: set[str] = EVERY) -> None:
    assert set(cells) == expected
    for label, cell in cells.items():
        assert cell.sqnr is not None and cell.p50 is not None and cell.p50 > 0, label
        # fp32 runtimes agree with the eager model to float rounding; int8 is further off.
        floor = 20 if "int8" in label else 90
        assert cell.sqnr > floor, (label, cell.sqnr)
        assert cell.top1 == 1.0 or "int8" in label, label
    assert cells["pytorch[eager]"].error_max_abs == 0


def test_a_factory_in_a_file_reaches_every_runtime(work: Path) -> None:
    out = CliRunner().invoke(app, ["run", "--model", f"{work}/mynet.py:build",
                                   "--input", "1x3x32x32", "-f", "all", *QUICK,
                                   "--db", str(work / "cli.db"),
                                   "--cache-dir", str(work / "cache"), "-q"])
    assert out.exit_code == 0, out.output
    _check_every_runtime(_cells(work / "cli.db"))


def test_a_spec_naming_the_factory_and_no_file_exports_nothing_more(work: Path) -> None:
    before = _index(work)  # the CLI test exported this very model (same weights, code, shapes)
    spec = work / "spec.json"
    spec.write_text(json.dumps({
        "model": {"name": "mynet", "format": "pytorch", "entry": "mynet.py:build"},
        "tests": [{"identifier": "mine", "iter": 3, "warmup": 1, "repeat": 1, "min_time": 0,
                   "inputs": {"x": {"shapes": [[1, 3, 32, 32]]}}}]}))
    # Every runtime planned from the cache (measuring each again would repeat the CLI test's
    # proof on the same files): nothing is exported, and the spec's own test is what runs.
    plan = benchlab.plan_sweep(spec, frameworks=["all"], cache_dir=work / "cache")
    assert _index(work) == before  # nothing exported: the second run reuses every file
    assert {config_label(job.identity.framework, job.identity.framework_config)
            for job in plan.jobs} == EVERY
    assert {job.identity.test_identifier for job in plan.jobs} == {"mine"}
    results = benchlab.run(spec, frameworks=["onnxruntime"], db=work / "spec.db",
                           cache_dir=work / "cache")
    assert _index(work) == before
    assert {r.identity.test_identifier for r in results} == {"mine"}  # the spec's own test
    assert set(_cells(work / "spec.db")) == {"onnxruntime", "onnxruntime[int8]"}


def test_a_module_object_from_python_reaches_pytorch_and_onnx_runtime(work: Path) -> None:
    # A notebook holds a module, not a file: the class below exists only in this script.
    script = textwrap.dedent(f"""
        import json, torch
        from torch import nn
        import benchlab
        from benchlab.report.matrix import matrix_cells

        class InMemory(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 4, 3)
                self.fc = nn.Linear(4, 6)
            def forward(self, x):
                return self.fc(torch.relu(self.conv(x)).mean((2, 3)))

        torch.manual_seed(3)
        results = benchlab.run(model=InMemory().eval(), inputs=[torch.zeros(1, 3, 24, 24)],
                               frameworks=["pytorch", "onnxruntime"],
                               db={str(work / "api.db")!r},
                               cache_dir={str(work / "cache")!r},
                               overrides=benchlab.TestOverrides(iter=3, warmup=1, repeat=1,
                                                                min_time=0))
        print(json.dumps(sorted(c.label for c in matrix_cells(results))))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    # The module frozen in the script's process reaches PyTorch's three modes and the ONNX
    # export; the other converters take the same frozen snapshot (the file test above).
    mine = {label for label in EVERY if label.startswith(("pytorch", "onnxruntime"))}
    assert set(json.loads(done.stdout.strip().splitlines()[-1])) == mine
    _check_every_runtime(_cells(work / "api.db"), mine)


def test_an_edited_weight_exports_again_and_only_what_the_frameworks_read(work: Path) -> None:
    write(work, "mynet.py", MYNET.format(seed=1))
    before = json.loads(_index(work))["formats"]
    out = CliRunner().invoke(app, ["run", "--model", f"{work}/mynet.py:build",
                                   "--input", "1x3x32x32", "-f", "onnxruntime", *QUICK,
                                   "--db", str(work / "edited.db"),
                                   "--cache-dir", str(work / "cache"), "-q"])
    assert out.exit_code == 0, out.output
    added = set(json.loads(_index(work))["formats"]) - set(before)
    # A new fingerprint, and onnxruntime reads only these: no TFLite or ExecuTorch export.
    assert {key.split("|")[1] for key in added} == {"onnx", "onnx_int8", "reference"}
    assert set(_cells(work / "edited.db")) == {"onnxruntime", "onnxruntime[int8]"}
