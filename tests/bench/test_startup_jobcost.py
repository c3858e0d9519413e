"""Start-up cost guards and smoke runs of bench/cli_startup.py and bench/job_cost.py.

The import checks run in fresh interpreters: they hold the line on what ``benchlab --help``
and every runner process import. The smoke runs only check that the scripts keep producing
their figures; no timing is asserted (the machines are shared and noisy).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bounded import run_bounded

BENCH = Path(__file__).resolve().parents[2] / "bench"
RUNTIMES = ("torch", "onnxruntime", "pandas", "pyarrow")


def _modules_after(statement: str) -> set[str]:
    """Top-level modules a fresh interpreter has imported after running ``statement``."""
    probe = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return {name.split(".")[0] for name in json.loads(proc.stdout.splitlines()[-1])}


def test_importing_the_cli_loads_no_runtime_and_no_heavy_library() -> None:
    loaded = _modules_after("import benchlab.cli.commands")
    assert not loaded & {*RUNTIMES, "numpy", "sqlalchemy", "yaml"}


def test_a_runner_process_imports_no_harness_side_library() -> None:
    # python -m benchlab.runner imports the benchlab package first: it must stay light.
    loaded = _modules_after("import benchlab.runner.loop")
    assert not loaded & {*RUNTIMES, "sqlalchemy", "yaml", "rich", "typer"}


def test_the_package_imports_its_public_names_on_first_use() -> None:
    probe = (
        "import sys, benchlab\n"
        "assert 'benchlab.api' not in sys.modules and 'numpy' not in sys.modules\n"
        "from benchlab import Status, run, TestOverrides\n"
        "from benchlab.targets import environment\n"
        "assert run is sys.modules['benchlab.api'].run\n"
        "assert set(benchlab.__all__) <= set(dir(benchlab))\n"
        "assert all(getattr(benchlab, name) is not None for name in benchlab.__all__)\n"
        "try:\n    benchlab.no_such_name\nexcept AttributeError:\n    pass\n"
        "else:\n    raise SystemExit('no AttributeError')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


def _smoke(script: str, tmp_path: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "x.json"
    proc = run_bounded(
        [sys.executable, str(BENCH / script), "--smoke", "--repeats", "1", "--out", str(out),
         *extra],
        limit_s=540,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads(out.read_text())
    assert record["smoke"] is True and record["repeats"] == 1 and record["command"]
    return record


def _positive_spread(cell: dict[str, float]) -> None:
    assert set(cell) == {"min", "median", "max"}
    assert all(math.isfinite(v) and v > 0 for v in cell.values()), cell


def test_cli_startup_smoke_writes_every_figure(tmp_path: Path) -> None:
    record = _smoke("cli_startup.py", tmp_path)
    assert record["name"] == "cli_startup"
    figures = record["figures"]
    commands = {"python -c pass", "benchlab --help", "benchlab results list"}
    assert set(figures["wall_ms"]) == commands
    for cell in figures["wall_ms"].values():
        _positive_spread(cell)
    assert set(figures["over_floor_ms"]) == commands - {"python -c pass"}
    assert all(math.isfinite(v) for v in figures["over_floor_ms"].values())
    # A correctness fact, not a timing: neither command may load a runtime.
    assert figures["no_runtime_imported"] is True
    assert figures["forbidden_modules_imported"] == {
        "benchlab --help": [],
        "benchlab results list": [],
    }
    profile = figures["importtime_benchlab_cli"]
    assert profile["benchlab_ms"] > 0 and profile["packages"]


@pytest.mark.slow
def test_job_cost_smoke_writes_every_figure(tmp_path: Path, zoo_cache_dir: Path) -> None:
    record = _smoke("job_cost.py", tmp_path, "--cache-dir", str(zoo_cache_dir))
    assert record["name"] == "job_cost"
    figures = record["figures"]
    # The smoke's configurations: ONNX Runtime's defaults (fp32, int8), PyTorch eager and
    # TorchScript.
    assert set(figures["per_process_ms"]) == {
        "mlp @ onnxruntime",
        "mlp @ onnxruntime:precision=int8",
        "mlp @ pytorch:mode=eager",
        "mlp @ pytorch:mode=torchscript",
    }
    for split in figures["per_process_ms"].values():
        assert set(split) == {"wall", "import", "load", "first", "timed", "rest"}
        for part, cell in split.items():
            if part == "rest":  # a difference: finite, of either sign on a noisy machine
                assert all(math.isfinite(v) for v in cell.values())
            else:
                _positive_spread(cell)
    for cell in figures["floors_ms"].values():
        _positive_spread(cell)
    sweep = figures["sweep"]
    # onnxruntime's defaults on a zoo model: the fp32 and the int8 file, one process each.
    assert (sweep["jobs"], sweep["processes"]) == (2, 2)
    assert figures["zoo_export_s"] > 0 and sweep["first_run_s"] > 0
    _positive_spread(sweep["warm_run_s"])
    assert all(math.isfinite(v) and v >= 0 for v in sweep["last_warm_run_runner_s"].values())


def test_runner_import_smoke_writes_every_figure(tmp_path: Path) -> None:
    record = _smoke("runner_import.py", tmp_path)
    assert record["name"] == "runner_import"
    cell = record["figures"]["pytorch/this"]
    _positive_spread(cell["import"])
    _positive_spread(cell["process"])
    # A correctness fact, not a timing: the timed import loads no harness module (the
    # frameworks package, its lazy hook, the torch package, its backend and its options).
    assert cell["benchlab_modules"] <= 5
