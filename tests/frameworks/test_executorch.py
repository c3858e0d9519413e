"""Tests of the ``executorch`` framework adapter: file choice, its command, real runs.

The runs use a two-input, two-output model lowered once per session (XNNPACK and portable)
in a separate process, so the test process never imports ExecuTorch's compiler stack.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from tiny_models import run_export_script

from benchlab.errors import UsageError
from benchlab.frameworks.base import Framework, Invocation, JobContext, Unsupported
from benchlab.frameworks.executorch import ExecuTorchFramework
from benchlab.protocol.lines import ParsedOutput
from benchlab.runner.config import RunnerConfig
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.targets.base import CommandResult, RunRequest
from benchlab.targets.host import HostTarget

from .availability import probe
from .runner_imports import assert_runner_loads_only_its_backend

XNNPACK = FrameworkConfig("executorch", {"delegate": "xnnpack"})
XNNPACK_INT8 = FrameworkConfig("executorch", {"delegate": "xnnpack", "precision": "int8"})
PORTABLE = FrameworkConfig("executorch", {"delegate": "portable"})
ZOO_FILES = {"pte_portable": "m.portable.pte", "pte_xnnpack_int8": "m.xnnpack-int8.pte",
             "pte_xnnpack": "m.xnnpack.pte"}

# Lowers a tiny two-input, two-output module twice and writes what the runs compare against:
# ref.npz (reference inputs + torch outputs) and seed0.npz (the torch outputs for the inputs
# the runner synthesises with seed 0 when neither spec nor reference gives any).
EXPORT = """
import sys
from pathlib import Path

import numpy as np
import torch

from benchlab.runner.accuracy import save_reference
from benchlab.runner.config import InputConfig
from benchlab.runner.loop import make_inputs

out = Path(sys.argv[1])
torch.manual_seed(0)


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x, y):
        hidden = torch.relu(self.fc1(x))
        return self.fc2(hidden) + y, hidden.sum(dim=1, keepdim=True)


model = Tiny().eval()


def run(*arrays):
    with torch.no_grad():
        return [t.numpy() for t in model(*(torch.from_numpy(a) for a in arrays))]


rng = np.random.default_rng(1)
x = rng.standard_normal((2, 8)).astype(np.float32)
y = rng.standard_normal((2, 4)).astype(np.float32)
save_reference(out / "ref.npz", {"x": x, "y": y}, run(x, y))
seeded = make_inputs([InputConfig(name="a", shape=[2, 8]), InputConfig(name="b", shape=[2, 4])], 0)
np.savez(out / "seed0.npz", *run(*seeded.values()))

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import to_edge, to_edge_transform_and_lower

program = torch.export.export(model, (torch.from_numpy(x), torch.from_numpy(y)))
lowered = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])
(out / "tiny.xnnpack.pte").write_bytes(lowered.to_executorch().buffer)
(out / "tiny.portable.pte").write_bytes(to_edge(program).to_executorch().buffer)
"""


@dataclass(frozen=True)
class Tiny:
    """The lowered programs and the files to check their runs against."""

    xnnpack: Path
    portable: Path
    reference: Path
    seed0: Path


@pytest.fixture(scope="session")
def tiny_pte(build_once: Callable[[str, Callable[[Path], None]], Path]) -> Tiny:
    # Built once per test run, whichever worker asks first (tests/conftest.py).
    out = build_once("tiny-executorch", functools.partial(run_export_script, EXPORT))
    return Tiny(out / "tiny.xnnpack.pte", out / "tiny.portable.pte", out / "ref.npz",
                out / "seed0.npz")


@pytest.fixture
def fw() -> ExecuTorchFramework:
    return ExecuTorchFramework()


def _run_with(invocation: Invocation, **overrides: object) -> ParsedOutput:
    """Run an adapter's runner command with some runner fields changed (``dump_outputs``)."""
    config = {**json.loads(invocation.argv[-1]), **overrides}
    proc = subprocess.run([*invocation.argv[:-1], json.dumps(config)], capture_output=True,
                          text=True, timeout=180, check=False,
                          env={**os.environ, **invocation.env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return ExecuTorchFramework().parse([CommandResult(0, proc.stdout, proc.stderr, 0.0)])


def test_is_a_framework(fw: ExecuTorchFramework) -> None:
    assert isinstance(fw, Framework)
    assert fw.name == "executorch"


def test_defaults_are_one_configuration_per_zoo_file(
    fw: ExecuTorchFramework, make_model: Callable[..., ModelDef]
) -> None:
    # In a fixed order (xnnpack, its int8 variant, portable), whatever the files' order.
    assert fw.configurations(make_model(ZOO_FILES), []) == [XNNPACK, XNNPACK_INT8, PORTABLE]
    only_portable = make_model({"pte_portable": "m.portable.pte"})
    assert fw.configurations(only_portable, []) == [PORTABLE]
    # A user's .pte under a key of their own runs as it was lowered.
    user = make_model({"program": "Net.PTE"}, format="executorch")
    assert fw.configurations(user, []) == [FrameworkConfig("executorch", {})]


def test_a_model_without_a_pte_file_is_unsupported(
    fw: ExecuTorchFramework, make_model: Callable[..., ModelDef]
) -> None:
    outcome = fw.configurations(make_model({"model": "m.tflite"}, format="tflite"), [])
    assert isinstance(outcome, Unsupported)
    assert ".pte" in outcome.reason and "'tflite'" in outcome.reason


@pytest.mark.parametrize(
    ("files", "options", "needle"),
    [
        # Variant requests are strict: another program must not stand in for the one asked.
        ({"pte_xnnpack": "m.pte"}, {"precision": "int8"}, "'pte_xnnpack_int8'"),
        ({"pte_xnnpack": "m.pte"}, {"delegate": "portable"}, "'pte_portable'"),
        ({"pte_portable": "m.pte"}, {"delegate": "portable", "precision": "int8"},
         "'pte_portable_int8'"),
        ({"program": "m.pte"}, {"delegate": "xnnpack"}, "'pte_xnnpack'"),
        ({"pte_xnnpack_int8": "q.pte"}, {"precision": "fp32"}, "int8"),
        ({"pte_xnnpack": "m.pte"}, {"delegate": "cuda"}, "delegate must be one of"),
        ({"pte_xnnpack": "m.pte"}, {"precision": "bf16"}, "precision must be one of"),
        ({"pte_xnnpack": "m.pte"}, {"file": "nope"}, "file='nope'"),
    ],
)
def test_impossible_requests_are_unsupported_with_the_reason(
    fw: ExecuTorchFramework,
    make_model: Callable[..., ModelDef],
    files: dict[str, str],
    options: dict[str, object],
    needle: str,
) -> None:
    outcome = fw.configurations(make_model(files), [FrameworkConfig("executorch", options)])
    assert isinstance(outcome, Unsupported)
    assert needle in outcome.reason


@pytest.mark.parametrize(
    ("options", "path", "runner_options"),
    [
        ({}, "/t/x.pte", {"delegate": "xnnpack", "precision": "fp32"}),
        ({"delegate": "portable"}, "/t/p.pte", {"delegate": "portable", "precision": "fp32"}),
        ({"precision": "int8"}, "/t/q.pte",
         {"delegate": "xnnpack", "precision": "int8"}),
        ({"file": "pte_portable", "threads": 1}, "/t/p.pte",
         {"file": "pte_portable", "threads": 1, "delegate": "portable", "precision": "fp32"}),
        # A file under a user's key: no delegate is claimed for it.
        ({"file": "mine"}, "/t/u.pte", {"file": "mine", "precision": "fp32"}),
    ],
)
def test_invocation_runs_the_chosen_file_and_names_its_variant(
    fw: ExecuTorchFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    options: dict[str, object],
    path: str,
    runner_options: dict[str, object],
) -> None:
    model = make_model({"mine": "u.pte", **ZOO_FILES})
    files = {"files.mine": "/t/u.pte", "files.pte_portable": "/t/p.pte",
             "files.pte_xnnpack_int8": "/t/q.pte", "files.pte_xnnpack": "/t/x.pte"}
    ctx = make_ctx(model, FrameworkConfig("executorch", options), files=files, threads=2)
    [invocation] = fw.invocations(ctx)
    config = RunnerConfig.model_validate_json(invocation.argv[3])
    assert config.backend == ExecuTorchFramework.backend
    assert config.model_path == path
    assert config.options == runner_options
    # The threads option beats the test's thread count.
    assert config.threads == options.get("threads", 2)


def test_invocation_of_an_unstaged_file_is_a_usage_error(
    fw: ExecuTorchFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
) -> None:
    ctx = make_ctx(make_model({"pte_xnnpack": "m.pte"}), XNNPACK, files={})
    with pytest.raises(UsageError, match="'pte_xnnpack' was not staged"):
        fw.invocations(ctx)


def test_availability_does_not_import_executorch() -> None:
    result = probe("executorch", "executorch", "torch")
    assert result == {
        "ok": True, "version": importlib.metadata.version("executorch"), "imported": [],
    }


@pytest.mark.slow
def test_xnnpack_run_end_to_end_through_the_host_target(
    fw: ExecuTorchFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    tiny_pte: Tiny,
    tmp_path: Path,
) -> None:
    model = make_model({"pte_xnnpack": "tiny.xnnpack.pte", "reference": "ref.npz"},
                       format="executorch")
    [config] = fw.configurations(model, [])  # type: ignore[misc]
    files = {"files.pte_xnnpack": str(tiny_pte.xnnpack), "files.reference": str(tiny_pte.reference)}
    ctx = make_ctx(model, config, files=files, workdir=str(tmp_path), iter=5, threads=1,
                   profile_ops=True)
    host = HostTarget()
    results = [host.run(RunRequest(i.argv, env=i.env, cwd=ctx.workdir, timeout=180))
               for i in fw.invocations(ctx)]
    assert all(r.ok for r in results), results[0].stderr[-2000:]
    parsed = fw.parse(results)
    assert len([s for s in parsed.samples if s.key == "NET latency"]) == 5
    details = parsed.details
    assert details["runtime"] == "executorch"
    assert details["runtime_version"] == importlib.metadata.version("executorch")
    # threads=1 resized the runtime's threadpool (its own default is one per core).
    assert (details["delegate"], details["precision"], details["threads"]) == ("xnnpack",
                                                                                "fp32", 1)
    assert details["model_file"] == "tiny.xnnpack.pte"
    assert "event tracer" in details["op_profile_unavailable"]
    assert not [s for s in parsed.samples if s.type != "NET"]
    assert details["inputs"] == {"x": [[2, 8], "float32"], "y": [[2, 4], "float32"]}
    errors = {s.metric: s.value for s in parsed.samples if s.metric.startswith("error_")}
    assert errors["error_max_abs"] < 1e-5


@pytest.mark.slow
def test_portable_run_takes_its_inputs_from_the_program(
    fw: ExecuTorchFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    tiny_pte: Tiny,
    tmp_path: Path,
) -> None:
    model = make_model({"pte_portable": "tiny.portable.pte"})
    ctx = make_ctx(model, PORTABLE, files={"files.pte_portable": str(tiny_pte.portable)},
                   workdir=str(tmp_path), iter=2, threads=2)
    [invocation] = fw.invocations(ctx)
    dumped = tmp_path / "outputs.npz"
    parsed = _run_with(invocation, dump_outputs=str(dumped))
    details = parsed.details
    assert details["inputs"] == {"input0": [[2, 8], "float32"], "input1": [[2, 4], "float32"]}
    assert (details["delegate"], details["threads"]) == ("portable", 2)
    with np.load(dumped) as got, np.load(tiny_pte.seed0) as want:
        # The program's output order is the torch module's: [2, 4] then [2, 1].
        assert [got[f"output.{i}"].shape for i in range(2)] == [(2, 4), (2, 1)]
        for i in range(2):
            np.testing.assert_allclose(got[f"output.{i}"], want[f"arr_{i}"], atol=1e-5)


@pytest.mark.slow
def test_the_runner_process_loads_only_the_runner_and_this_backend(
    fw: ExecuTorchFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    tiny_pte: Tiny,
    tmp_path: Path,
) -> None:
    model = make_model({"pte_xnnpack": "tiny.xnnpack.pte"}, format="executorch")
    ctx = make_ctx(model, XNNPACK, files={"files.pte_xnnpack": str(tiny_pte.xnnpack)},
                   workdir=str(tmp_path), iter=2, threads=1)
    [invocation] = fw.invocations(ctx)
    # Not ExecuTorch's export stack either: importing it costs seconds per process.
    assert assert_runner_loads_only_its_backend(invocation, "executorch",
                                                forbidden=("executorch.exir", "torchao")) > 0
