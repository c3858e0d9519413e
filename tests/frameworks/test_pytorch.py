"""Tests of the ``pytorch`` framework adapter: modes, commands, and real runs of each mode."""

from __future__ import annotations

import importlib.metadata
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchlab.frameworks.base import Framework, JobContext, Unsupported
from benchlab.frameworks.pytorch import PyTorchFramework
from benchlab.protocol.lines import ParsedOutput
from benchlab.runner.config import RunnerConfig
from benchlab.spec.types import FrameworkConfig, InputDef, ModelDef
from benchlab.targets.base import RunRequest
from benchlab.targets.host import HostTarget

from .availability import probe
from .conftest import job_context, model_def
from .runner_imports import assert_runner_loads_only_its_backend

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
        ({"mode": "compile"}, {"model": "m.pt"}, None, "compile mode needs model.entry"),
        ({"mode": "export"}, {"model": "m.pt"}, ENTRY, "needs a torch.export .pt2 file"),
        # The AOTInductor package is a .pt2 too, but torch.export.load cannot read it.
        ({"mode": "export"}, {"aoti": "m.pt2"}, ENTRY, "needs a torch.export .pt2 file"),
        ({"mode": "export"}, {"model": "m.aoti.pt2"}, ENTRY, "needs a torch.export .pt2 file"),
        ({"mode": "aoti"}, {"pt2": "m.pt2"}, ENTRY, "`benchlab zoo export --formats aoti`"),
        ({"mode": "export", "file": "x"}, {"pt2": "m.pt2"}, ENTRY, "file='x' is not among"),
        ({"precision": "fp8"}, {}, ENTRY, "precision 'fp8' is not one of fp32, bf16"),
        ({"mode": "torchscript", "precision": "bf16"}, {"model": "m.pt"}, ENTRY,
         "applies to eager and compile modes"),
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


# --- torch.export, AOTInductor and torch.compile --------------------------------------------

EXPORT = FrameworkConfig("pytorch", {"mode": "export"})
AOTI = FrameworkConfig("pytorch", {"mode": "aoti"})
COMPILE = FrameworkConfig("pytorch", {"mode": "compile"})
ZOO_FILES = {"torchscript": "m.pt", "pt2": "m.pt2", "aoti": "m_aoti.pt2"}


def test_defaults_take_every_file_mode_but_never_compile(
    fw: PyTorchFramework, make_model: Callable[..., ModelDef]
) -> None:
    zoo = make_model(ZOO_FILES, format="pytorch", entry=ENTRY)
    assert fw.configurations(zoo, []) == [EAGER, TORCHSCRIPT, EXPORT, AOTI]
    assert fw.configurations(make_model({"model": "net.pt2"}, format="pt2"), []) == [EXPORT]
    assert fw.configurations(make_model({"aoti": "net.pt2"}, format="pt2"), []) == [AOTI]
    # Compiling costs 15-50 s per process: only on request, and then it is kept as asked.
    requested = [FrameworkConfig("pytorch", {"mode": "compile", "precision": "bf16",
                                             "backend": "inductor", "compile_mode": None})]
    assert fw.configurations(zoo, requested) == requested


def test_onnx_only_models_name_every_way_pytorch_could_run(
    fw: PyTorchFramework, make_model: Callable[..., ModelDef]
) -> None:
    outcome = fw.configurations(make_model({"onnx": "m.onnx"}), [])
    assert isinstance(outcome, Unsupported)
    for needle in ("model.entry", "TorchScript", ".pt2", "AOTInductor", "'onnx'"):
        assert needle in outcome.reason


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"mode": "export"}, "/t/m.pt2"),
        ({"mode": "aoti"}, "/t/m_aoti.pt2"),
        ({"mode": "export", "file": "aoti"}, "/t/m_aoti.pt2"),
        ({"mode": "compile"}, None),
    ],
)
def test_each_mode_runs_its_own_file(
    fw: PyTorchFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    options: dict[str, str],
    path: str | None,
) -> None:
    model = make_model(ZOO_FILES, format="pytorch", entry=ENTRY)
    files = {f"files.{key}": f"/t/{name}" for key, name in ZOO_FILES.items()}
    ctx = make_ctx(model, FrameworkConfig("pytorch", options), files=files)
    config = RunnerConfig.model_validate_json(fw.invocations(ctx)[0].argv[3])
    assert config.model_path == path
    assert config.entry == ENTRY and config.options == options


@dataclass(frozen=True)
class TinyTorch:
    """The eager tiny model's entry, its .pt2 export and a reference of fp32 eager outputs."""

    entry: str
    pt2: Path
    reference: Path


@pytest.fixture(scope="module")
def tiny_torch(entry_file: Path, tmp_path_factory: pytest.TempPathFactory) -> TinyTorch:
    import numpy as np
    import torch

    from benchlab.frameworks.pytorch.backend import build_from_entry
    from benchlab.runner.accuracy import save_reference

    root = tmp_path_factory.mktemp("pt2")
    entry = f"{entry_file}:tiny"
    model = build_from_entry(entry)
    x = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    # The example input fixes the batch size that the AOTInductor package is compiled for.
    program = torch.export.export(model, (torch.from_numpy(x),))
    torch.export.save(program, str(root / "tiny.pt2"))
    with torch.inference_mode():
        expected = model(torch.from_numpy(x)).numpy()
    save_reference(root / "reference.npz", {"x": x}, [expected])
    return TinyTorch(entry, root / "tiny.pt2", root / "reference.npz")


def _run_mode(
    fw: PyTorchFramework, tiny: TinyTorch, options: dict[str, Any], workdir: Path,
    files: dict[str, Path] | None = None, reference: bool = True, **test: Any,
) -> ParsedOutput:
    test.setdefault("iter", 4)
    keys = {"pt2": tiny.pt2, **({"reference": tiny.reference} if reference else {}),
            **(files or {})}
    model = model_def({k: v.name for k, v in keys.items()}, format="pytorch", entry=tiny.entry)
    [config] = fw.configurations(  # type: ignore[misc]
        model, [FrameworkConfig("pytorch", options)]
    )
    ctx = job_context(model, config, files={f"files.{k}": str(v) for k, v in keys.items()},
                      workdir=str(workdir), threads=1, **test)
    host = HostTarget()
    results = [host.run(RunRequest(i.argv, env=i.env, cwd=str(workdir), timeout=300))
               for i in fw.invocations(ctx)]
    assert all(r.ok for r in results), results[0].stderr[-3000:]
    parsed = fw.parse(results)
    assert not parsed.malformed
    assert len(_values(parsed, "latency")) == ctx.test.iter
    assert parsed.details["mode"] == options["mode"]
    return parsed


def _values(parsed: ParsedOutput, metric: str, type_: str = "NET") -> list[float]:
    return [s.value for s in parsed.samples if s.type == type_ and s.metric == metric]


@pytest.mark.slow
def test_export_run_reads_the_pt2_and_its_example_inputs(
    fw: PyTorchFramework, tiny_torch: TinyTorch, tmp_path: Path
) -> None:
    # No reference (it would supply the inputs): they come from the example in the .pt2.
    parsed = _run_mode(fw, tiny_torch, {"mode": "export"}, tmp_path, reference=False,
                       profile_ops=True)
    assert parsed.details["inputs"] == {"input": [[2, 8], "float32"]}
    assert parsed.details["precision"] == "fp32"
    assert "aten::addmm" in {s.type for s in parsed.samples if s.type != "NET"}


@pytest.mark.slow
def test_aoti_run_loads_the_package(
    fw: PyTorchFramework, tiny_torch: TinyTorch, tmp_path: Path
) -> None:
    import torch
    from torch._inductor import aoti_compile_and_package

    package = tmp_path / "tiny_aoti.pt2"
    # About 30-60 s of C++ compilation on two cores: the one AOTInductor build of the suite.
    with warnings.catch_warnings():
        # Inductor's imports and internals warn about torch's own deprecations (TorchScript,
        # pytree), which say nothing about benchlab.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        aoti_compile_and_package(torch.export.load(str(tiny_torch.pt2)),
                                 package_path=str(package))
    parsed = _run_mode(fw, tiny_torch, {"mode": "aoti"}, tmp_path, files={"aoti": package},
                       profile_ops=True)
    assert "torch.profiler cannot attribute" in parsed.details["op_profile_unavailable"]
    assert parsed.details["aoti_cpu_isa"]
    assert _values(parsed, "error_max_abs")[0] < 1e-5


@pytest.mark.slow
def test_compile_run_reports_compile_time_apart(
    fw: PyTorchFramework, tiny_torch: TinyTorch, tmp_path: Path
) -> None:
    parsed = _run_mode(fw, tiny_torch, {"mode": "compile"}, tmp_path)
    [compile_ms] = _values(parsed, "compile_time")
    [first_ms] = _values(parsed, "first_inference")
    print(f"compile_time {compile_ms:.0f} ms, first_inference {first_ms:.2f} ms, "
          f"inductor cache hits {parsed.details.get('inductor_cache_hits')}")
    # The compiling call is not the first inference: that one ran already-compiled code.
    assert compile_ms > first_ms and compile_ms > max(_values(parsed, "latency"))
    assert parsed.details["compile_backend"] == "inductor"
    assert parsed.details["compiled_graphs"] == 1
    assert _values(parsed, "error_max_abs")[0] < 1e-5


@pytest.mark.slow
def test_eager_bf16_autocast_is_reported_and_less_accurate(
    fw: PyTorchFramework, tiny_torch: TinyTorch, tmp_path: Path
) -> None:
    parsed = _run_mode(fw, tiny_torch, {"mode": "eager", "precision": "bf16"}, tmp_path)
    assert parsed.details["precision"] == "bf16"
    # bfloat16 keeps 8 bits of mantissa: errors of ~1e-2 where fp32 eager matches exactly.
    assert _values(parsed, "error_max_abs")[0] > 1e-4


@pytest.mark.slow
def test_the_runner_process_loads_only_the_runner_and_this_backend(
    fw: PyTorchFramework, tiny_torch: TinyTorch, tmp_path: Path
) -> None:
    model = model_def({"pt2": tiny_torch.pt2.name}, format="pytorch", entry=tiny_torch.entry)
    [config] = fw.configurations(  # type: ignore[misc]
        model, [FrameworkConfig("pytorch", {"mode": "export"})]
    )
    ctx = job_context(model, config, files={"files.pt2": str(tiny_torch.pt2)},
                      workdir=str(tmp_path), iter=2, threads=1)
    [invocation] = fw.invocations(ctx)
    assert assert_runner_loads_only_its_backend(invocation, "pytorch") > 0
