"""The Sweep: one value for what a sweep measures, and a fingerprint that names it canonically.

Unit: the canonical line ignores the order options and override keys came in, and changes with
what they say. End to end with a real zoo model (the MLP, exported to ONNX only) on ONNX
Runtime: two plans with options given in another order share a fingerprint; a run stored under
the name the repr-based fingerprint gave it is found by ``resume``; a Sweep passed whole runs
the same jobs as its fields passed one by one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import benchlab
import benchlab.zoo as zoo
from benchlab.errors import UsageError
from benchlab.store import RunStatus, open_store
from benchlab.harness.sweep import Sweep


def test_the_fingerprint_line_ignores_the_order_options_came_in() -> None:
    one = Sweep.of(models=["mlp"], frameworks=["onnxruntime:precision=int8,threads=1"],
                   overrides=benchlab.TestOverrides(iter=5, warmup=2))
    other = Sweep.of(models=["mlp"], frameworks=["onnxruntime:threads=1,precision=int8"],
                     overrides=benchlab.TestOverrides(warmup=2, iter=5))
    assert one.fingerprint_line("host@a") == other.fingerprint_line("host@a")
    # The repr-based line it replaces did not: that is why it was replaced.
    assert one.legacy_fingerprint_line("host@a") != other.legacy_fingerprint_line("host@a")
    # What the sweep says still tells sweeps apart.
    changed = Sweep.of(models=["mlp"], frameworks=["onnxruntime:threads=2,precision=int8"],
                       overrides=benchlab.TestOverrides(warmup=2, iter=5))
    assert changed.fingerprint_line("host@a") != one.fingerprint_line("host@a")
    assert one.fingerprint_line("host@b") != one.fingerprint_line("host@a")
    # Two configurations of one framework, in either order (the zoo's ExecuTorch variants).
    both = ["executorch:delegate=xnnpack", "executorch:precision=int8,delegate=xnnpack"]
    assert (Sweep.of(frameworks=both).fingerprint_line("h")
            == Sweep.of(frameworks=both[::-1]).fingerprint_line("h"))


def test_a_sweep_is_built_from_what_the_api_takes() -> None:
    sweep = Sweep.of("a.json", models=("mlp",), frameworks=["pytorch:mode=eager"],
                     target="host", string_map={"program": "./bench"})
    assert sweep.specs == (Path("a.json"),) and sweep.models == ("mlp",)
    assert [(c.name, dict(c.options)) for c in sweep.frameworks] == [("pytorch",
                                                                       {"mode": "eager"})]
    assert sweep.targets == ("host",) and dict(sweep.string_map) == {"program": "./bench"}
    with pytest.raises(TypeError):
        sweep.string_map["program"] = "other"  # type: ignore[index]
    with pytest.raises(UsageError, match="give a Sweep or its fields, not both"):
        benchlab.plan_sweep(sweep, models=["convnet"])


@pytest.fixture()
def onnx_mlp(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(zoo.ZOO, "mlp", replace(zoo.ZOO["mlp"], formats=("onnx",)))
    yield


def test_plans_with_options_in_another_order_share_their_fingerprint(
        onnx_mlp: None, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    one = benchlab.plan_sweep(models=["mlp"], frameworks=["onnxruntime:threads=1,inter_op_threads=1"],
                              overrides=benchlab.TestOverrides(iter=3, warmup=1), cache_dir=cache)
    other = benchlab.plan_sweep(Sweep.of(
        models=["mlp"], frameworks=["onnxruntime:inter_op_threads=1,threads=1"],
        overrides=benchlab.TestOverrides(warmup=1, iter=3), cache_dir=cache))
    assert one.fingerprint == other.fingerprint
    assert [j.identity.key for j in one.jobs] == [j.identity.key for j in other.jobs]
    # Each also knows the name the repr-based fingerprint gave it, for runs started then.
    assert len(one.fingerprints) == 2 and one.fingerprints[0] == one.fingerprint
    assert one.fingerprints[1] != other.fingerprints[1]


def test_a_run_named_by_the_old_fingerprint_is_resumed(onnx_mlp: None, tmp_path: Path) -> None:
    cache, db = tmp_path / "cache", tmp_path / "r.db"
    sweep = Sweep.of(models=["mlp"], frameworks=["onnxruntime"], cache_dir=cache,
                     overrides=benchlab.TestOverrides(iter=2, warmup=0, repeat=1, min_time=0.0))
    legacy = benchlab.plan_sweep(sweep).fingerprints[1]
    with open_store(db) as store:
        old = store.start_run(fingerprint=legacy, description="started before the change")
        store.mark_interrupted(old.id)
    results = benchlab.run(sweep, db=db, resume=True)
    assert results.run_id == old.id and len(results) == 1 and not results.failed
    # The results carry the run's record as it ended, not as the resume found it.
    assert results.run is not None and results.run.status is RunStatus.FINISHED
    assert (results.run.ok_count, results.run.description) == (1, "started before the change")
    with open_store(db) as store:
        assert store.get_run(old.id).status is RunStatus.FINISHED
        # The next run of the same sweep is a new run under the canonical name.
        assert store.latest_run(benchlab.plan_sweep(sweep).fingerprint) is None
