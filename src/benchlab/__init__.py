"""benchlab: benchmark ML inference across frameworks, backends and devices.

The Python API mirrors the CLI: :func:`run` is ``benchlab run`` and returns :class:`Results`;
:func:`load_spec` / :func:`load_suite` read spec files; :func:`open_store` opens the results
store that ``benchlab results`` reads; :func:`init_lab` and :func:`submit_to_lab` are
``benchlab lab init`` and ``benchlab lab submit`` (the lab: :mod:`benchlab.lab`);
:func:`framework_options` is ``benchlab frameworks``, each framework's declared options.

The public names are imported on first use (PEP 562 module ``__getattr__``). Every runner
process starts with ``python -m benchlab.runner``, which imports this package first; importing
the whole API here (SQLAlchemy, pydantic models, YAML, rich) would add most of a second to
every fresh process and to ``benchlab --help``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlab.lazy import MovedModules, names_at_homes

# Old module paths (benchlab.sweep, benchlab.step...) still import until 0.2.0, with a
# DeprecationWarning naming the new one: benchlab.lazy.MOVED_MODULES, CHANGELOG.md.
MovedModules.install()

if TYPE_CHECKING:
    from benchlab.api import compare, plan_sweep, run, track
    from benchlab.harness.doctor import diagnose
    from benchlab.energy.session import EnergySettings
    from benchlab.plugins import open_target
    from benchlab.targets.adb import AdbTarget
    from benchlab.targets.host import HostTarget
    from benchlab.targets.ssh import SshTarget
    from benchlab.errors import BenchlabError, InfrastructureError, SpecError, UserError
    from benchlab.frameworks.options import FrameworkOption
    from benchlab.plugins import framework_options
    from benchlab.harness.overrides import TestOverrides
    from benchlab.lab.client import submit_to_lab
    from benchlab.lab.queue import init_lab
    from benchlab.stats.race import RacePolicy
    from benchlab.targets.reboot import RebootPolicy
    from benchlab.harness.outputs import ModelOutputs, outputs
    from benchlab.zoo import export_models
    from benchlab.devicetools.prepare import PreparedTool, prepare_device_tools
    from benchlab.harness.results import Results
    from benchlab.schema.labels import RunLabels
    from benchlab.schema.scenario import Scenario
    from benchlab.schema.result import SCHEMA_VERSION, JobIdentity, Result, Sample, Status, Summary
    from benchlab.spec import load_spec, load_suite
    from benchlab.stats.summary import summarize
    from benchlab.store import open_store
    from benchlab.harness.sweep import Sweep, parse_framework

__version__ = "0.1.0"

__all__ = [
    "AdbTarget",
    "BenchlabError",
    "EnergySettings",
    "FrameworkOption",
    "HostTarget",
    "InfrastructureError",
    "JobIdentity",
    "ModelOutputs",
    "PreparedTool",
    "RacePolicy",
    "RebootPolicy",
    "Result",
    "Results",
    "RunLabels",
    "SCHEMA_VERSION",
    "Sample",
    "Scenario",
    "SpecError",
    "SshTarget",
    "Status",
    "Summary",
    "Sweep",
    "TestOverrides",
    "UserError",
    "compare",
    "diagnose",
    "export_models",
    "framework_options",
    "init_lab",
    "load_spec",
    "load_suite",
    "open_store",
    "open_target",
    "outputs",
    "parse_framework",
    "plan_sweep",
    "prepare_device_tools",
    "run",
    "submit_to_lab",
    "summarize",
    "track",
]

# Where each public name lives; the module is imported when the name is first asked for.
_HOMES = {
    "SCHEMA_VERSION": "benchlab.schema.result",
    "BenchlabError": "benchlab.errors",
    "InfrastructureError": "benchlab.errors",
    "JobIdentity": "benchlab.schema.result",
    "Result": "benchlab.schema.result",
    "Results": "benchlab.harness.results",
    "RunLabels": "benchlab.schema.labels",
    "Sample": "benchlab.schema.result",
    "Scenario": "benchlab.schema.scenario",
    "SpecError": "benchlab.errors",
    "Status": "benchlab.schema.result",
    "Summary": "benchlab.schema.result",
    "TestOverrides": "benchlab.harness.overrides",
    "RebootPolicy": "benchlab.targets.reboot",
    "RacePolicy": "benchlab.stats.race",
    "compare": "benchlab.api",
    "ModelOutputs": "benchlab.harness.outputs",
    "outputs": "benchlab.harness.outputs",
    "export_models": "benchlab.zoo",
    "FrameworkOption": "benchlab.frameworks.options",
    "framework_options": "benchlab.plugins",
    "PreparedTool": "benchlab.devicetools.prepare",
    "prepare_device_tools": "benchlab.devicetools.prepare",
    "UserError": "benchlab.errors",
    "load_spec": "benchlab.spec",
    "load_suite": "benchlab.spec",
    "open_store": "benchlab.store",
    "parse_framework": "benchlab.harness.sweep",
    "Sweep": "benchlab.harness.sweep",
    "plan_sweep": "benchlab.api",
    "run": "benchlab.api",
    "summarize": "benchlab.stats.summary",
    "track": "benchlab.api",
    "AdbTarget": "benchlab.targets.adb",
    "HostTarget": "benchlab.targets.host",
    "SshTarget": "benchlab.targets.ssh",
    "EnergySettings": "benchlab.energy.session",
    "diagnose": "benchlab.harness.doctor",
    "open_target": "benchlab.plugins",
    "init_lab": "benchlab.lab.queue",
    "submit_to_lab": "benchlab.lab.client",
}


__getattr__ = names_at_homes(__name__, _HOMES, globals())


def __dir__() -> list[str]:
    """Module attributes plus the public names not imported yet."""
    return sorted(set(globals()) | set(__all__))
