"""Tests of the ``pytorch`` framework adapter: modes, commands, and a real eager run."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from pathlib import Path

import pytest

from benchlab.frameworks.base import Framework, JobContext, Unsupported
from benchlab.frameworks.pytorch import PyTorchFramework
from benchlab.runner.config import RunnerConfig
from benchlab.spec.types import FrameworkConfig, InputDef, ModelDef
from benchlab.targets.base import RunRequest
from benchlab.targets.host import HostTarget

from .availability import probe

ENTRY = "benchlab.zoo.models:mlp"
EAGER = FrameworkConfig("pytorch", {"mode": "eager"})
TORCHSCRIPT = FrameworkConfig("pytorch", {"mode": "torchscript"})


@pytest.fixture
def fw() -> PyTorchFramework:
    return PyTorchFramework()


def test_is_a_framework(fw: PyTorchFramework) -> None:
    assert isinstance(fw, Framework)
    assert fw.name == "pytorch"


def test_defaults_to_every_mode_the_model_supports(
    fw: PyTorchFramework, make_model: Callable[..., ModelDef]
) -> None:
    both = make_model({"model": "m.pt"}, format="torchscript", entry=ENTRY)
    assert fw.configurations(both, []) == [EAGER, TORCHSCRIPT]
    eager_only = make_model({}, format="pytorch", entry=ENTRY)
    assert fw.configurations(eager_only, []) == [EAGER]
    script_only = make_model({"model": "m.ptl"}, format="torchscript")
    assert fw.configurations(script_only, []) == [TORCHSCRIPT]


def test_the_file_name_decides_over_the_download_location(
    fw: PyTorchFramework, make_model: Callable[..., ModelDef]
) -> None:
    from benchlab.spec.types import FileRef

    ref = FileRef(key="model", location="https://example.com/get?id=3", base_dir=Path("/"),
                  sha256="0" * 64, filename="net.PT")
    model = ModelDef(name="m", format="torchscript", files={"model": ref})
    assert fw.configurations(model, []) == [TORCHSCRIPT]


def test_an_onnx_only_model_is_unsupported_with_a_reason(
    fw: PyTorchFramework, make_model: Callable[..., ModelDef]
) -> None:
    model = make_model({"model": "m.onnx"}, format="onnx")
    outcome = fw.configurations(model, [])
    assert isinstance(outcome, Unsupported)
    assert "'onnx'" in outcome.reason and "entry" in outcome.reason


@pytest.mark.parametrize(
    ("options", "files", "entry", "needle"),
    [
        ({"mode": "jit"}, {"model": "m.pt"}, ENTRY, "unknown pytorch mode 'jit'"),
        ({"mode": "torchscript"}, {}, ENTRY, "no TorchScript file"),
        ({"mode": "eager"}, {"model": "m.pt"}, None, "eager mode needs model.entry"),
        ({}, {"model": "m.pt"}, None, "eager mode needs model.entry"),  # eager is the default
    ],
)
def test_requested_modes_are_validated(
    fw: PyTorchFramework,
    make_model: Callable[..., ModelDef],
    options: dict[str, str],
    files: dict[str, str],
    entry: str | None,
    needle: str,
) -> None:
    model = make_model(files, format="torchscript", entry=entry)
    outcome = fw.configurations(model, [FrameworkConfig("pytorch", options)])
    assert isinstance(outcome, Unsupported)
    assert needle in outcome.reason


def test_valid_requests_are_kept_as_given(
    fw: PyTorchFramework, make_model: Callable[..., ModelDef]
) -> None:
    model = make_model({"model": "m.pt"}, format="torchscript", entry=ENTRY)
    requested = [FrameworkConfig("pytorch", {"mode": "torchscript", "label": "x"})]
    assert fw.configurations(model, requested) == requested


def test_torchscript_invocation_runs_the_runner_on_the_pushed_file(
    fw: PyTorchFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
) -> None:
    model = make_model({"weights": "w.bin", "model": "m.pt"}, format="torchscript")
    ctx = make_ctx(
        model, TORCHSCRIPT, files={"files.weights": "/t/w.bin", "files.model": "/t/m.pt"},
        repetition=3, iter=12, warmup=4, threads=2, env={"EXTRA": "1"}, min_time=0.5,
        inputs=(InputDef("x", (2, 8), "float16"),), profile_ops=True, target_ci=0.02,
        max_time=9.0,
    )
    [invocation] = fw.invocations(ctx)
    argv = list(invocation.argv)
    assert argv[:3] == [ctx.python, "-m", "benchlab.runner"] and len(argv) == 4
    # The one JSON argument is exactly what the runner validates on the other side.
    config = RunnerConfig.model_validate_json(argv[3])
    assert config.backend == PyTorchFramework.backend
    assert config.model_path == "/t/m.pt"
    assert config.options == {"mode": "torchscript"}
    assert (config.iterations, config.warmup, config.min_time, config.max_time) == (12, 4, 0.5, 9.0)
    assert config.target_ci == 0.02 and config.profile_ops and config.threads == 2
    assert [(i.name, i.shape, i.dtype) for i in config.inputs] == [("x", [2, 8], "float16")]
    # Each repetition draws its own inputs.
    assert config.seed == 3
    assert invocation.env["OMP_NUM_THREADS"] == "2"
    assert invocation.env["EXTRA"] == "1"


def test_eager_invocation_passes_the_entry_and_no_file(
    fw: PyTorchFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
) -> None:
    model = make_model({"model": "m.pt"}, format="torchscript", entry=ENTRY)
    ctx = make_ctx(model, EAGER, files={"files.model": "/t/m.pt"})
    [invocation] = fw.invocations(ctx)
    config = RunnerConfig.model_validate_json(invocation.argv[3])
    assert config.entry == ENTRY
    assert config.model_path is None
    assert config.threads is None
    assert "OMP_NUM_THREADS" not in invocation.env


def test_eager_run_end_to_end_through_the_host_target(
    fw: PyTorchFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    entry_file: Path,
) -> None:
    # The entry names a .py file, as a user's own model would be given.
    model = make_model({}, format="pytorch", entry=f"{entry_file}:tiny")
    [config] = fw.configurations(model, [])  # type: ignore[misc]
    host = HostTarget()
    workdir = host.make_workdir("pytorch-e2e")
    try:
        ctx = make_ctx(model, config, workdir=workdir, iter=4, threads=1)
        results = [
            host.run(RunRequest(i.argv, env=i.env, cwd=workdir, timeout=120))
            for i in fw.invocations(ctx)
        ]
    finally:
        host.remove_workdir(workdir)
    assert all(r.ok for r in results), results[0].stderr[-2000:]
    parsed = fw.parse(results)
    assert len([s for s in parsed.samples if s.key == "NET latency"]) == 4
    assert parsed.details["mode"] == "eager"
    assert parsed.details["threads"] == 1
    # The factory's example_shapes supplied the inputs.
    assert parsed.details["inputs"] == {"input0": [[2, 8], "float32"]}


def test_availability_does_not_import_torch() -> None:
    result = probe("pytorch", "torch")
    assert result == {
        "ok": True, "version": importlib.metadata.version("torch"), "imported": [],
    }


def test_build_from_entry(entry_file: Path) -> None:
    from benchlab.frameworks.pytorch.backend import build_from_entry

    model = build_from_entry(f"{entry_file}:tiny")
    assert model.example_shapes == [[2, 8]]
    zoo = build_from_entry("benchlab.zoo.models:mlp")
    assert zoo.example_shapes
    for bad in ("no_colon", ":factory", "module:"):
        with pytest.raises(ValueError, match="must look like"):
            build_from_entry(bad)
    with pytest.raises(AttributeError):
        build_from_entry(f"{entry_file}:no_such_factory")
