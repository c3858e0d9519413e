"""Your PyTorch model on every runtime, as docs/your-model.md shows it: its ``mynet.py`` through
``--model file.py:factory`` and its two commands, run as written; a spec whose entry names no
file; its Python example's ``benchlab.run(model=module)``. Real exports, real runtimes, accuracy
against the model's own eager outputs. A second run exports nothing; an edited weight exports
again."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from bounded import run_bounded
from typer.testing import CliRunner

import benchlab
from benchlab.cli.commands import app
from benchlab.report.matrix import Cell, config_label, matrix_cells
from benchlab.schema.result import Status
from benchlab.store import open_store

from .nets import doc_block, write

#: Every configuration `-f all` gives a forward-pass model here (README's test command installs
#: every runtime): fp32 and int8 where the runtime has both.
EVERY = {"pytorch[eager]", "pytorch[torchscript]", "pytorch[export]", "onnxruntime",
         "onnxruntime[int8]", "openvino[f32]", "tflite", "executorch[xnnpack]",
         "executorch[xnnpack,int8]"}
#: A quick test, so that the page's runs take seconds; with this test's cache and store.
QUICK = ["--iter", "3", "--warmup", "1", "--repeat", "1", "--min-time", "0"]
pytestmark = pytest.mark.slow
#: The page's folder and what its first command printed.
Work = tuple[Path, subprocess.CompletedProcess[str]]


def _page_command(line: str, work: Path, db: str) -> subprocess.CompletedProcess[str]:
    """One of the page's ``benchlab run`` lines, as a user types it, in ``work``."""
    args = shlex.split(line)
    assert args[:2] == ["benchlab", "run"]
    return run_bounded([sys.executable, "-m", "benchlab", *args[1:], *QUICK,
                        "--db", str(work / db), "--cache-dir", str(work / "cache")],
                       limit_s=540, cwd=work)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Work:
    """The page's ``mynet.py`` and its first command (``-f all``) run as written: every other
    test here starts from what that run exported (measuring each runtime again on the same
    files would repeat its proof)."""
    folder = tmp_path_factory.mktemp("yourmodel")
    write(folder, "mynet.py", doc_block("file: mynet.py"))
    return folder, _page_command(_page_commands()[0], folder, "cli.db")


def _page_commands() -> list[str]:
    commands = [line for line in doc_block("run").splitlines() if line.strip()]
    assert len(commands) == 2 and "-f all" in commands[0]
    return commands


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


def test_the_pages_factory_in_a_file_reaches_every_runtime(work: Work) -> None:
    folder, first = work
    assert first.returncode == 0, first.stderr[-3000:]
    # What the page says: eight formats exported, nine cells.
    assert "exporting 1 model(s), 8 format(s)" in first.stderr, first.stderr[-3000:]
    assert first.stdout.count("mynet ") >= 9, first.stdout
    _check_every_runtime(_cells(folder / "cli.db"))


def test_the_pages_second_command_exports_nothing_and_writes_its_report(work: Work) -> None:
    folder, _ = work
    done = _page_command(_page_commands()[1], folder, "second.db")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "exporting" not in done.stderr, done.stderr[-3000:]
    assert (folder / "mine.html").stat().st_size > 0
    assert set(_cells(folder / "second.db")) == {"onnxruntime", "onnxruntime[int8]",
                                                  "openvino[f32]"}


def test_a_spec_naming_the_factory_and_no_file_exports_nothing_more(work: Work) -> None:
    folder, _ = work
    before = _index(folder)  # the page's first command exported this very model
    spec = folder / "spec.json"
    spec.write_text(json.dumps({
        "model": {"name": "mynet", "format": "pytorch", "entry": "mynet.py:build"},
        "tests": [{"identifier": "mine", "iter": 3, "warmup": 1, "repeat": 1, "min_time": 0,
                   "inputs": {"x": {"shapes": [[1, 3, 64, 64]]}}}]}))
    # Every runtime planned from the cache (measuring each again would repeat the first
    # command's proof on the same files): nothing is exported, and the spec's own test runs.
    plan = benchlab.plan_sweep(spec, frameworks=["all"], cache_dir=folder / "cache")
    assert _index(folder) == before  # nothing exported: the second run reuses every file
    assert {config_label(job.identity.framework, job.identity.framework_config)
            for job in plan.jobs} == EVERY
    assert {job.identity.test_identifier for job in plan.jobs} == {"mine"}
    results = benchlab.run(spec, frameworks=["onnxruntime"], db=folder / "spec.db",
                           cache_dir=folder / "cache")
    assert _index(folder) == before
    assert {r.identity.test_identifier for r in results} == {"mine"}  # the spec's own test
    assert set(_cells(folder / "spec.db")) == {"onnxruntime", "onnxruntime[int8]"}


def test_the_pages_module_object_from_python_reaches_pytorch_and_onnx_runtime(work: Work) -> None:
    folder, _ = work
    # A notebook holds a module, not a file: the page's class exists only in its script.
    code = doc_block("run python").replace(
        'frameworks=["pytorch", "onnxruntime"])',
        f'frameworks=["pytorch", "onnxruntime"], cache_dir={str(folder / "cache")!r}, '
        f'db={str(folder / "api.db")!r}, overrides=benchlab.TestOverrides(iter=3, warmup=1, '
        'repeat=1, min_time=0))')
    assert "cache_dir" in code  # the example still has the call this test adds settings to
    done = run_bounded([sys.executable, "-c", code], limit_s=540, cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 5, lines  # eager, TorchScript, export; ONNX Runtime fp32 and int8
    assert all(re.search(r": p50 [\d.]+ \w+, SQNR \d+ dB$", line) for line in lines), lines
    # The module frozen in the script's process reaches PyTorch's three modes and the ONNX
    # export; the other converters take the same frozen snapshot (the file test above).
    mine = {label for label in EVERY if label.startswith(("pytorch", "onnxruntime"))}
    _check_every_runtime(_cells(folder / "api.db"), mine)


def test_an_edited_weight_exports_again_and_only_what_the_frameworks_read(work: Work) -> None:
    folder, _ = work
    page = doc_block("file: mynet.py")
    edited = page.replace("    return TinyNet().eval()",
                          "    torch.manual_seed(1)  # another weight\n    return TinyNet().eval()")
    assert edited != page
    write(folder, "mynet.py", edited)
    before = json.loads(_index(folder))["formats"]
    out = CliRunner().invoke(app, ["run", "--model", f"{folder}/mynet.py:build",
                                   "--input", "1x3x64x64", "-f", "onnxruntime", *QUICK,
                                   "--db", str(folder / "edited.db"),
                                   "--cache-dir", str(folder / "cache"), "-q"])
    assert out.exit_code == 0, out.output
    added = set(json.loads(_index(folder))["formats"]) - set(before)
    # A new fingerprint, and onnxruntime reads only these: no TFLite or ExecuTorch export.
    assert {key.split("|")[1] for key in added} == {"onnx", "onnx_int8", "reference"}
    assert set(_cells(folder / "edited.db")) == {"onnxruntime", "onnxruntime[int8]"}
