"""Exports that take turns with measurements: paused process groups, models handed out as each
export ends, a staged run that measures the first model before the next one is exported, and
a staged run's fingerprint that a resume finds."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import benchlab
import benchlab.zoo as zoo
from benchlab.exporting.session import ExportSession
from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import InfrastructureError
from benchlab.store import open_store
from benchlab.exporting.definition import ModelDefinition
from benchlab.exporting.pipeline import PausableProcesses

_MODELS = textwrap.dedent('''
    import os, time
    import torch
    from torch import nn


    def _tiny():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).eval()
        model.example_shapes = [[2, 8]]
        return model


    def quick():
        return _tiny()


    def slow():
        # Says who it is, then takes long enough to still be exporting when quick is done.
        with open(os.environ["PIPELINE_SLOW_PID"], "w") as out:
            out.write(str(os.getpid()))
        time.sleep(float(os.environ.get("PIPELINE_SLOW_S", "15")))
        return _tiny()
''')


def _state(pid: int) -> str:
    """The process's state letter from /proc (``T`` when stopped), ``gone`` once reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "gone"
    return stat.rsplit(")", 1)[1].split()[0]


def _wait_for_state(pid: int, wanted: set[str], timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while (state := _state(pid)) not in wanted and time.monotonic() < deadline:
        time.sleep(0.05)
    return state


@pytest.fixture()
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModelDefinition, ModelDefinition, ModelDefinition]:
    """``quick`` and ``quick2`` export in seconds; ``slow`` sleeps first and writes its pid.

    Measured as they come, the first model exports alone; the next two side by side. Their one
    format is TorchScript, the cheapest to export (the order of the exports is what counts).
    """
    (tmp_path / "pipeline_models.py").write_text(_MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + ":" + ":".join(sys.path))
    monkeypatch.setenv("PIPELINE_SLOW_PID", str(tmp_path / "slow.pid"))
    made = []
    for name, entry in (("quick", "quick"), ("quick2", "quick"), ("slow", "slow")):
        model = ModelDefinition(name=f"pipeline_{name}", description="test model", task="regression",
                         input_shapes=((2, 8),), entry=f"pipeline_models:{entry}",
                         sources=("pipeline_models",), formats=("torchscript",))
        monkeypatch.setitem(zoo.ZOO, model.name, model)
        made.append(model)
    return made[0], made[1], made[2]


def test_pause_stops_the_whole_group_and_resume_continues_it(tmp_path: Path) -> None:
    processes = PausableProcesses()
    # A shell whose child does the work: the group, not only the parent, must stop.
    proc = processes.popen(["sh", "-c", "sleep 60 & wait"], stdout=subprocess.PIPE, text=True)
    child = None
    for _ in range(200):
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        if children:
            child = int(children[0])
            break
        time.sleep(0.02)
    assert child is not None
    try:
        processes.pause()
        assert _wait_for_state(proc.pid, {"T"}) == "T"
        assert _wait_for_state(child, {"T"}) == "T"
        processes.resume()
        assert _wait_for_state(child, {"S", "R"}) in {"S", "R"}
        processes.close()
        proc.wait(timeout=30)
        assert proc.returncode == -9
    finally:
        processes.close()
    # After close, nothing new starts.
    with pytest.raises(InfrastructureError, match="cancelled"):
        processes.popen(["true"])


@pytest.mark.slow
def test_models_come_as_their_exports_end_and_the_rest_wait(
    models: tuple[ModelDefinition, ModelDefinition, ModelDefinition], tmp_path: Path
) -> None:
    quick, quick2, slow = models
    names = [quick.name, slow.name, quick2.name]
    cache = ArtifactCache(tmp_path / "cache")
    with ExportSession(zoo.definitions(names), cache, workers=2) as session:
        batches = session.batches(pause=True)
        first = next(batches)
        assert [e.model.name for e in first] == [quick.name]
        assert "torchscript" in {k for k in first[0].files}
        # The first model exported alone: the others have not started.
        assert not (tmp_path / "slow.pid").exists()
        second = next(batches)
        assert [e.model.name for e in second] == [quick2.name]
        # While the caller holds quick2 (it would be measuring it), slow's export is stopped.
        pid = int((tmp_path / "slow.pid").read_text())
        assert _wait_for_state(pid, {"T"}) == "T"
        third = next(batches)
        assert [e.model.name for e in third] == [slow.name]
        assert _wait_for_state(pid, {"gone", "Z"}) in {"gone", "Z"}
        assert next(batches, None) is None
    # All are cached now: a new session hands them out at once, before exporting anything.
    with ExportSession(zoo.definitions(names), cache) as session:
        assert [[e.model.name for e in b] for b in session.batches(pause=True)] == [names]


@pytest.mark.slow
def test_leaving_early_kills_the_exports_and_remembers_no_failure(
    models: tuple[ModelDefinition, ModelDefinition, ModelDefinition], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    quick, quick2, slow = models
    cache = ArtifactCache(tmp_path / "cache")
    with ExportSession(zoo.definitions([quick.name, slow.name, quick2.name]), cache, workers=2) as session:
        for number, _ in enumerate(session.batches(pause=True)):
            if number == 1:  # quick2 is measured, slow paused; then Ctrl-C, or a crash
                break
    pid = int((tmp_path / "slow.pid").read_text())
    assert _wait_for_state(pid, {"gone", "Z"}) in {"gone", "Z"}
    # The cancelled export is not a remembered failure: the next session exports it again.
    monkeypatch.setenv("PIPELINE_SLOW_S", "0")
    again = zoo.export_models([slow.name], cache, workers=1)[0]
    assert again.exported and not again.failures


@pytest.mark.slow
def test_a_run_measures_the_first_model_while_the_next_export_waits(
    models: tuple[ModelDefinition, ModelDefinition, ModelDefinition], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from dataclasses import replace

    for model in models:  # ONNX Runtime measures them: the one format they need
        monkeypatch.setitem(zoo.ZOO, model.name, replace(model, formats=("onnx",)))
    quick, quick2, slow = models
    names = [quick.name, quick2.name, slow.name]
    monkeypatch.setenv("PIPELINE_SLOW_S", "8")
    out = tmp_path / "out.txt"
    overrides = benchlab.TestOverrides(iter=3, min_time=0.0, repeat=1, warmup=1)
    with out.open("w") as stream:
        results = benchlab.run(models=names, frameworks=["onnxruntime"],
                               db=tmp_path / "r.db", cache_dir=tmp_path / "cache",
                               overrides=overrides, progress=True,
                               console=Console(file=stream, width=200))
    assert {r.identity.model_name for r in results if r.ok} == set(names)
    lines = out.read_text().splitlines()

    def first(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    # quick alone, measured before the others start; quick2 measured while slow waits.
    assert first(f"✓ {quick.name}/") < first(f"exporting {quick2.name}"), "\n".join(lines)
    assert first(f"✓ {quick2.name}/") < first(f"exported {slow.name}: onnx done")
    assert first("1 export(s) paused while pipeline_quick2 is measured") < first(
        f"✓ {quick2.name}")
    # The sweep was named before any export, so a dry run and a resume find the same one.
    plan = benchlab.plan_sweep(models=names, frameworks=["onnxruntime"],
                               cache_dir=tmp_path / "cache", overrides=overrides)
    store = open_store(tmp_path / "r.db")
    try:
        record = store.latest_run(plan.fingerprint)
        assert record is not None and record.id == results.run_id
        store.finish_run(record.id, "interrupted")  # as a killed run is left
    finally:
        store.close()
    again = benchlab.run(models=names, frameworks=["onnxruntime"],
                         db=tmp_path / "r.db", cache_dir=tmp_path / "cache",
                         overrides=overrides, resume=True)
    assert again.run_id == results.run_id
    assert sorted(r.identity.key for r in again) == sorted(r.identity.key for r in results)


@pytest.mark.slow
def test_a_staged_session_hands_out_quick_formats_first_and_the_slow_ones_after(
    models: tuple[ModelDefinition, ModelDefinition, ModelDefinition], tmp_path: Path
) -> None:
    from dataclasses import replace

    from benchlab.exporting.specs import spec_of
    from benchlab.harness.planner import plan
    from benchlab.targets.host import HostTarget

    quick, quick2, _ = models
    # LiteRT's file is a later format: its export waits until every model's quick ones end.
    both = [replace(m, formats=("onnx", "tflite")) for m in (quick, quick2)]
    cache = ArtifactCache(tmp_path / "cache")
    with ExportSession(both, cache, workers=2, staged=True) as session:
        handed = [(e.model.name, tuple(sorted(e.exported)), e.elsewhere)
                  for batch in session.batches(pause=True) for e in batch]
        stages = [e for batch in ExportSession(both, cache, staged=True).batches() for e in batch]
    assert [(name, exported) for name, exported, _ in handed] == [
        (quick.name, ("onnx", "reference")), (quick2.name, ("onnx", "reference")),
        (quick.name, ("tflite",)), (quick2.name, ("tflite",))]
    assert handed[0][2] == ("tflite",) and "onnxruntime" in handed[2][2]
    # Planned, each stage gives the jobs of its own frameworks only, and no "no file" skip.
    first, second = (plan([spec_of(e, cache)], HostTarget(), device="here")
                     for e in (replace(stages[0], elsewhere=("tflite",)),
                               replace(stages[0], elsewhere=handed[2][2])))
    assert "tflite" not in {j.identity.framework for j in first.jobs}
    assert not [s for s in first.skipped if "tflite" in s.label]
    assert {j.identity.framework for j in second.jobs} == {"tflite"}
