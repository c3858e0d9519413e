"""One repetition's runner process, run on the host as the harness runs it, and what the
diagnosis tests read from it."""

from __future__ import annotations

from benchlab.schema.diagnosis import Coverage
from benchlab.frameworks.base import JobContext, RunnerFramework
from benchlab.schema.result import DetailKey
from benchlab.targets.base import CommandResult, RunRequest
from benchlab.targets.host import HostTarget

__all__ = ["process_coverage", "run_one_process"]


def run_one_process(fw: RunnerFramework, ctx: JobContext, timeout: float = 180) -> CommandResult:
    """Run the framework's one invocation for ``ctx`` in its work folder."""
    [invocation] = fw.invocations(ctx)
    return HostTarget().run(RunRequest(invocation.argv, env=invocation.env, cwd=ctx.workdir,
                                       timeout=timeout))


def process_coverage(fw: RunnerFramework, ctx: JobContext) -> Coverage:
    """The delegation coverage a runner process for ``ctx`` reported (it must have run)."""
    result = run_one_process(fw, ctx)
    assert result.ok, result.stderr[-2000:]
    coverage = Coverage.from_detail(fw.parse([result]).details.get(DetailKey.DELEGATION))
    assert coverage is not None
    return coverage
