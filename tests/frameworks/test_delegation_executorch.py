"""ExecuTorch's delegation coverage, read from real programs lowered here: the partitions the
XNNPACK delegate took, the operators it left to the portable kernels, and the flag when a
delegate that was asked for took nothing.

The programs are lowered once per session in a separate process (the test process never
imports ExecuTorch's compiler stack); that process also reads them back with ExecuTorch's own
``deserialize_pte_binary``, the reference for the backend's own reader of the plan.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from bounded import run_bounded

from benchlab.schema.diagnosis import Coverage, coverage_warning
from benchlab.frameworks.base import JobContext
from benchlab.frameworks.executorch import ExecuTorchFramework
from benchlab.runner.config import RunnerConfig
from benchlab.spec.types import FrameworkConfig, ModelDef

pytest.importorskip("executorch")

from benchlab.frameworks.executorch.backend import ExecuTorchBackend  # noqa: E402
from benchlab.frameworks.executorch.program import plan_calls, pte_coverage  # noqa: E402

from .one_process import process_coverage

# Linear -> cumsum -> Linear. XNNPACK's partitioner takes both linears and leaves cumsum out
# (checked with ExecuTorch 1.4.1), so the lowered program has two partitions around one
# portable kernel call: the smallest model with an operator that falls back.
EXPORT = """
import json
import sys
from pathlib import Path

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import to_edge, to_edge_transform_and_lower
from executorch.exir._serialize._program import deserialize_pte_binary
from executorch.exir.schema import DelegateCall, KernelCall

out = Path(sys.argv[1])
torch.manual_seed(0)


class WithCumsum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 8)
        self.fc2 = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(torch.cumsum(self.fc1(x), dim=1))


program = torch.export.export(WithCumsum().eval(), (torch.randn(2, 8),))
lowered = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])
(out / "cumsum.xnnpack.pte").write_bytes(lowered.to_executorch().buffer)
(out / "cumsum.portable.pte").write_bytes(to_edge(program).to_executorch().buffer)

calls = {}
for name in ("cumsum.xnnpack.pte", "cumsum.portable.pte"):
    pte = deserialize_pte_binary((out / name).read_bytes())
    plan = getattr(pte, "program", pte).execution_plan[0]
    delegates, kernels = [], []
    for chain in plan.chains:
        for instruction in chain.instructions:
            args = instruction.instr_args
            if isinstance(args, DelegateCall):
                delegates.append(plan.delegates[args.delegate_index].id)
            elif isinstance(args, KernelCall):
                op = plan.operators[args.op_index]
                kernels.append(op.name + ("." + op.overload if op.overload else ""))
    calls[name] = {"delegates": delegates, "kernels": kernels}
(out / "calls.json").write_text(json.dumps(calls))
"""


@dataclass(frozen=True)
class Programs:
    """The lowered programs and what ExecuTorch's deserializer reads in each."""

    xnnpack: Path
    portable: Path
    calls: dict[str, dict[str, list[str]]]


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Programs:
    out = tmp_path_factory.mktemp("executorch-delegation")
    proc = run_bounded([sys.executable, "-c", EXPORT, str(out)], limit_s=540)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Programs(out / "cumsum.xnnpack.pte", out / "cumsum.portable.pte",
                    json.loads((out / "calls.json").read_text()))


def _coverage(path: Path, options: dict[str, str]) -> Coverage:
    """The coverage the runner-side backend reports after loading ``path``."""
    backend = ExecuTorchBackend(RunnerConfig(
        backend=ExecuTorchFramework.backend, model_path=str(path), options=options))
    backend.load()
    return backend.delegation()


def test_the_plan_reads_as_executorchs_own_deserializer_reads_it(programs: Programs) -> None:
    for path in (programs.xnnpack, programs.portable):
        calls = plan_calls(str(path))
        want = programs.calls[path.name]
        assert (list(calls.delegates), list(calls.kernels)) == (want["delegates"],
                                                                want["kernels"])


def test_an_operator_xnnpack_does_not_take_is_shown_as_fallen_back(programs: Programs) -> None:
    coverage = _coverage(programs.xnnpack, {"delegate": "xnnpack"})
    assert (coverage.engine, coverage.asked) == ("XnnpackBackend", True)
    assert coverage.partitions == 2
    assert coverage.fallback == {"aten::cumsum.out": 1}
    assert coverage.by_engine == {"XnnpackBackend": 2}
    # The file does not say how many operators sit in a partition.
    assert coverage.nodes is None and coverage.delegated is None and coverage.share is None
    assert coverage.summary() == "2 parts + 1 op"
    assert coverage_warning(coverage) is None and not coverage.note


def test_a_portable_program_has_no_partition_and_is_flagged_when_a_delegate_was_asked(
        programs: Programs) -> None:
    portable = _coverage(programs.portable, {"delegate": "portable"})
    assert (portable.engine, portable.asked, portable.partitions) == ("portable", False, 0)
    assert portable.fallback["aten::cumsum.out"] == 1
    assert portable.fallback_count == len(programs.calls["cumsum.portable.pte"]["kernels"])
    assert portable.by_engine == {} and coverage_warning(portable) is None

    asked = pte_coverage(str(programs.portable), "xnnpack")
    assert (asked.engine, asked.asked, asked.partitions) == ("XnnpackBackend", True, 0)
    warning = coverage_warning(asked)
    assert warning is not None and "XnnpackBackend" in warning and "took no operator" in warning


def test_a_users_own_program_names_the_delegates_it_holds(programs: Programs) -> None:
    # No delegate asked (a file under a key of the user's): nothing to flag, but the engine
    # and partitions are what the file holds.
    coverage = _coverage(programs.xnnpack, {})
    assert (coverage.engine, coverage.asked, coverage.partitions) == ("XnnpackBackend", False, 2)
    assert pte_coverage(str(programs.portable), None).engine == "portable"


def test_an_unreadable_program_gives_a_note_rather_than_an_error(programs: Programs,
                                                                 tmp_path: Path) -> None:
    not_a_program = tmp_path / "not.pte"
    not_a_program.write_bytes(b"\0" * 64)
    coverage = pte_coverage(str(not_a_program), "xnnpack")
    assert coverage.asked and coverage.partitions is None
    assert "could not read the program's execution plan" in coverage.note
    assert "not an ExecuTorch program" in coverage.note

    cut = tmp_path / "cut.pte"
    cut.write_bytes(programs.xnnpack.read_bytes()[:100])
    assert "could not read" in pte_coverage(str(cut), "xnnpack").note
    assert "no method 'other'" in pte_coverage(str(programs.xnnpack), "xnnpack", "other").note


@pytest.mark.slow
def test_a_runner_process_reports_the_delegation_in_its_details(
        make_model: Callable[..., ModelDef], make_ctx: Callable[..., JobContext],
        programs: Programs, tmp_path: Path) -> None:
    fw = ExecuTorchFramework()
    # The zoo's key: the adapter tells the runner the delegate the file was lowered to.
    model = make_model({"pte_xnnpack": "cumsum.xnnpack.pte"}, format="executorch")
    [config] = fw.configurations(model, [])  # type: ignore[misc]
    assert config == FrameworkConfig("executorch", {"delegate": "xnnpack"})
    ctx = make_ctx(model, config, files={"files.pte_xnnpack": str(programs.xnnpack)},
                   workdir=str(tmp_path), iter=2, threads=1)
    coverage = process_coverage(fw, ctx)
    assert (coverage.engine, coverage.asked, coverage.partitions) == ("XnnpackBackend", True, 2)
    assert coverage.fallback == {"aten::cumsum.out": 1}
