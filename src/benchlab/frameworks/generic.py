"""The ``generic`` framework: run the spec's commands and read the metric lines they print.

This is FAI-PEP's ``generic`` framework: any binary that prints ``PyTorchObserver {json}`` or
benchlab's native metric lines (on stdout or stderr) can be benchmarked without an adapter.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchlab.errors import SpecError
from benchlab.frameworks.base import Invocation, JobContext, Unsupported, spec_command_invocations
from benchlab.frameworks.options import LIBS, FrameworkOption
from benchlab.protocol.lines import ParsedOutput, parse_output
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.schema.availability import Availability
from benchlab.targets.base import CommandResult

__all__ = ["GenericFramework"]


class GenericFramework:
    """Runs ``tests[].commands`` through the target's shell, one after another per repetition."""

    name = "generic"
    #: The test's commands carry everything but the shared libraries they load.
    declared_options: tuple[FrameworkOption, ...] = (LIBS,)

    def availability(self) -> Availability:
        """Always available: it needs nothing but a shell."""
        return Availability(ok=True, version=None)

    def configurations(
        self, model: ModelDef, requested: Sequence[FrameworkConfig]
    ) -> list[FrameworkConfig] | Unsupported:
        """One configuration; the commands carry everything else."""
        return list(requested) or [FrameworkConfig(self.name, {})]

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """The test's commands with every placeholder substituted."""
        if not ctx.test.commands:
            raise SpecError(
                ctx.spec.path,
                "the generic framework needs 'commands' (or FAI-PEP's 'command') in the test",
                f"tests[{ctx.test.identifier}].commands",
            )
        return spec_command_invocations(ctx)

    def parse(self, results: Sequence[CommandResult]) -> ParsedOutput:
        """Metric lines may come on stdout, stderr or the device log (Android's logcat)."""
        text = "\n".join(part for r in results for part in (r.stdout, r.stderr, r.log))
        return parse_output(text)
