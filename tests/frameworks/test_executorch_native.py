"""``executorch:runner=native``: benchlab's own runner over ExecuTorch 1.5's libraries, run
natively on this host (issue 64).

The runner is built before the tests (tests/prebuild.py, key ``host-et-runner``), never
inside one. What is checked is what a user reads: the outputs agree with eager PyTorch
(the reference), the per-operator rows name the delegate's events, the result names the
runtime that ran and the one that exported, and a program the runtime refuses fails its job
with the runtime's reason.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from prebuild import prepared

import benchlab
from benchlab.devicetools import BuiltTools, host_architecture
from benchlab.devicetools.etrunner import ET_RUNNER, ET_VERSION, build_et_runner
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.errors import InfrastructureError, UsageError
from benchlab.frameworks.base import Staging
from benchlab.frameworks.executorch import ExecuTorchFramework
from benchlab.protocol.tensorfiles import read_tensors
from benchlab.runner.accuracy import load_reference, save_reference
from benchlab.schema.result import Metric, Status
from benchlab.spec.artifacts import default_cache_dir
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.base import RunRequest
from benchlab.targets.host import HostTarget

from .conftest import job_context, model_def
from .test_executorch import Tiny, tiny_pte  # noqa: F401 - the session's shared export

ITER = 3
QUICK = benchlab.TestOverrides(iter=ITER, warmup=1, min_time=0.0, repeat=1)
PROFILED = benchlab.TestOverrides(iter=ITER, warmup=1, min_time=0.0, repeat=1, profile_ops=True)


@pytest.fixture(scope="module")
def et_runner() -> BuiltTools:
    """The runner for this host, as the run prepared it (found in benchlab's own cache)."""
    prepared("host-et-runner")
    return build_et_runner(host_architecture(), device_tools_dir(default_cache_dir()))


@pytest.mark.slow
def test_the_zoo_mlp_runs_natively_portable_and_xnnpack_with_eager_accuracy_and_etdump_rows(
        et_runner: BuiltTools, zoo_cache_dir: Path, tmp_path: Path) -> None:
    results = benchlab.run(
        models=["mlp"], frameworks=["executorch:runner=native,delegate=xnnpack",
                                    "executorch:runner=native,delegate=portable"],
        overrides=PROFILED, cache_dir=zoo_cache_dir,
        db=tmp_path / "r.db")
    by_delegate = {r.details.get("delegate"): r for r in results}
    assert set(by_delegate) == {"xnnpack", "portable"}, [(r.identity.label, r.error)
                                                         for r in results]
    for delegate, result in by_delegate.items():
        assert result.status is Status.OK, (delegate, result.error)
        details = result.details
        # Honest about what ran: benchlab's runner, 1.5.1's libraries, a 1.4.1 export.
        assert details["tool"] == f"{ET_RUNNER} (ExecuTorch {ET_VERSION} libs)"
        assert details["runtime_version"] == ET_VERSION
        assert details["pte_exported_by"] == "1.4.1"
        assert "exported by ExecuTorch 1.4.1" in details["runtime_note"]
        # The timed iterations only; the warm-up is the cold first inference.
        latencies = [s for s in result.samples if s.key == "NET latency"]
        assert len(latencies) == ITER
        assert result.summaries["NET first_inference"].p50 > 0
        assert result.summaries["NET memory_peak"].p50 > 1
        # The reference is eager PyTorch's output for the same inputs.
        assert details["outputs"] == [{"index": 0, "sizes": [16, 10]}]
        assert result.summaries[f"NET {Metric.ERROR_MAX_ABS}"].p50 < 1e-4, delegate
        assert result.summaries[f"NET {Metric.SQNR}"].p50 > 60, delegate
        assert details["op_profile_source"] == "ETDump"
        assert details["threads"] >= 1
    # What the program delegates, read from the host's copy of the file the runner loaded.
    assert by_delegate["xnnpack"].details["delegation"]["partitions"] >= 1
    assert by_delegate["portable"].details["delegation"]["by_engine"] == {}
    ops = {d: {s.type for s in r.samples if s.type != "NET"} for d, r in by_delegate.items()}
    # XNNPACK's own events, named as its delegate; the portable kernels by operator.
    assert "xnnpack: DELEGATE_CALL" in ops["xnnpack"]
    assert any(op.startswith("xnnpack: Fully Connected") for op in ops["xnnpack"]), ops
    assert "addmm.out" in ops["portable"] and not any("xnnpack" in op for op in ops["portable"])
    # One row per timed execution, as a host backend's profile_ops gives.
    addmm = [s for s in by_delegate["portable"].samples if s.type == "addmm.out"]
    assert len(addmm) == ITER and all(s.value > 0 for s in addmm)


@pytest.mark.slow
def test_outputs_come_back_as_arrays_from_the_native_runner(
        et_runner: BuiltTools, zoo_cache_dir: Path) -> None:
    got = benchlab.outputs("mlp", "executorch:runner=native,delegate=xnnpack",
                           cache_dir=zoo_cache_dir)
    assert [a.shape for a in got.outputs] == [(16, 10)]
    np.testing.assert_allclose(got.outputs[0], got.reference[0], atol=1e-5)  # type: ignore[index]
    assert got.errors["sqnr"] > 60
    assert list(got.inputs) == ["input0"] and got.inputs["input0"].shape == (16, 512)
    # Inputs of the caller's own: no reference made from them, so nothing to compare.
    mine = {"input0": np.ones((16, 512), np.float32)}
    again = benchlab.outputs("mlp", "executorch:runner=native,delegate=xnnpack",
                             inputs=mine, cache_dir=zoo_cache_dir)
    assert again.reference is None and again.errors == {}
    assert not np.allclose(again.outputs[0], got.outputs[0])


def _run_tiny(fw: ExecuTorchFramework, pte: Path, tiny: Tiny, tmp_path: Path,
              **test: object) -> tuple[object, object]:
    """One repetition through the adapter as the harness drives it on the host: stage the
    runner and the reference's inputs, run the command, attach what it pulled."""
    config = FrameworkConfig("executorch", {"runner": "native", "delegate": "portable"})
    model = model_def({"pte_portable": pte.name, "reference": "ref.npz"}, format="executorch")
    local = {"files.pte_portable": pte, "files.reference": tiny.reference}
    bare = job_context(model, config, workdir=str(tmp_path), **test)
    made = fw.device_files(Staging(
        spec=bare.spec, test=bare.test, config=config, python=sys.executable,
        abi=host_architecture(), local_files=local, scratch=tmp_path,
        cache_root=default_cache_dir()))
    files = {key: str(path) for key, path in {**local, **made}.items()}
    [invocation] = fw.invocations(replace(bare, files=files))
    done = HostTarget().run(RunRequest(invocation.argv, env=invocation.env, cwd=str(tmp_path),
                                       timeout=60))
    pulled = {name: tmp_path / name for name in invocation.pull if (tmp_path / name).is_file()}
    done = replace(done, files={**local, **pulled})
    return done, (fw.parse([done]) if done.ok else None)


@pytest.mark.slow
def test_two_inputs_and_two_outputs_keep_their_order_and_values(
        et_runner: BuiltTools, tiny_pte: Tiny, tmp_path: Path) -> None:  # noqa: F811
    fw = ExecuTorchFramework()
    done, parsed = _run_tiny(fw, tiny_pte.portable, tiny_pte, tmp_path, iter=2, warmup=0)
    assert done.ok, done.stderr[-2000:]  # type: ignore[attr-defined]
    got = read_tensors(tmp_path / "outputs.json")
    with np.load(tiny_pte.reference) as ref:
        # The torch module's outputs, [2, 4] then [2, 1], from its inputs x and y.
        np.testing.assert_allclose(got["output0"], ref["output.0"], atol=1e-5)
        np.testing.assert_allclose(got["output1"], ref["output.1"], atol=1e-5)
    errors = {s.metric: s.value for s in parsed.samples if s.type == "NET"}  # type: ignore[attr-defined]
    assert errors[Metric.ERROR_MAX_ABS] < 1e-5


@pytest.mark.slow
def test_an_input_of_the_wrong_size_is_refused_naming_the_input(
        et_runner: BuiltTools, tiny_pte: Tiny, tmp_path: Path) -> None:  # noqa: F811
    fw = ExecuTorchFramework()
    # The inputs swapped: the method's first input is x, [2, 8], y is [2, 4].
    wrong = tmp_path / "ref.npz"
    reference = load_reference(tiny_pte.reference)
    save_reference(wrong, {"y": reference.inputs["y"], "x": reference.inputs["x"]},
                   reference.outputs)
    done, _ = _run_tiny(fw, tiny_pte.portable, replace(tiny_pte, reference=wrong), tmp_path)
    assert not done.ok  # type: ignore[attr-defined]
    assert "input 0" in done.stderr and "does not hold the 64 bytes" in done.stderr, (  # type: ignore[attr-defined]
        done.stderr)  # type: ignore[attr-defined]


@pytest.mark.slow
def test_a_truncated_program_fails_its_job_with_the_runtimes_reason(
        et_runner: BuiltTools, tiny_pte: Tiny, zoo_cache_dir: Path,  # noqa: F811
        tmp_path: Path) -> None:
    cut = tmp_path / "cut.pte"
    cut.write_bytes(tiny_pte.xnnpack.read_bytes()[:2000])
    whole = Path(shutil.copy(tiny_pte.xnnpack, tmp_path / "whole.pte"))
    failed, ok = (benchlab.run(model=str(path), frameworks=["executorch:runner=native"],
                               overrides=QUICK, cache_dir=zoo_cache_dir,
                               db=tmp_path / "r.db")[0] for path in (cut, whole))
    assert failed.status is Status.FAILED
    assert "ExecuTorch refused the program" in failed.error, failed.error
    assert "InvalidProgram" in failed.error
    assert ok.status is Status.OK, ok.error
    # Without a reference the runner feeds ones, as executor_runner does: two outputs.
    assert [o["sizes"] for o in ok.details["outputs"]] == [[2, 4], [2, 1]]


def test_runner_option_is_declared_refuses_a_binary_beside_it_and_is_native_without_python(
        tmp_path: Path) -> None:
    fw = ExecuTorchFramework()
    declared = {o.name: o for o in fw.declared_options}
    assert declared["runner"].choices == ("auto", "python", "native")
    assert declared["runner"].problem("nativ") is not None
    config = FrameworkConfig("executorch", {"runner": "native", "binary": "/x/executor_runner"})
    bare = job_context(model_def({"pte_xnnpack": "m.pte"}), config)
    with pytest.raises(UsageError, match="binary= runs your own executor_runner"):
        fw.device_files(Staging(spec=bare.spec, test=bare.test, config=config,
                                python=sys.executable, abi="x86_64", local_files={},
                                scratch=tmp_path, cache_root=tmp_path))
    # auto: the Python runtime where the target has Python, benchlab's runner where it has
    # none (a phone, where it travels in its glibc bundle), a given executor_runner as given.
    assert not fw.runs_native_runner(sys.executable, {})
    assert fw.runs_native_runner("", {}) and fw.runs_native_runner("", {"runner": "auto"})
    assert not fw.runs_native_runner("", {"binary": "/x/executor_runner"})
    model = bare.spec.model
    assert fw.why_not_without_python(model, {}) is None
    assert "runner=python" in str(fw.why_not_without_python(model, {"runner": "python"}))
    # Nothing is built for a target with Python, and nothing is kept off a phone.
    python = Staging(spec=bare.spec, test=bare.test, config=FrameworkConfig("executorch", {}),
                     python=sys.executable, abi="arm64-v8a", local_files={}, scratch=tmp_path,
                     cache_root=tmp_path)
    assert fw.device_files(python) == {} and fw.kept_files(python) is None
    assert not (tmp_path / "devicetools").exists()


@pytest.mark.skipif(shutil.which("riscv64-linux-gnu-g++") is not None,
                    reason="this machine has a riscv64 cross compiler")
def test_a_missing_cross_compiler_is_named_before_anything_is_fetched(tmp_path: Path) -> None:
    with pytest.raises(InfrastructureError, match="g\\+\\+-riscv64-linux-gnu"):
        build_et_runner("riscv64", tmp_path)
    assert not (tmp_path / "sources").exists()

