"""The spin jobs the interleaved benches measure, built as ``benchlab compare`` builds them.

Two kinds, both doing spin.py's integer work loop (``WORK = 20_000`` steps × (1 + slowdown)):

- **In-process** (``runner_jobs``): a runner framework whose backend is
  ``tests/ab/spin_backend.py`` (the one definition of the spin backend, imported by the runner
  by module name through ``PYTHONPATH``), with the slowdown as a framework option, so the two
  sides are two configurations of one runtime and :func:`benchlab.ab.inprocess.inprocess_session`
  can hold both in one process.
- **Programs** (``program_jobs``): ``examples/ab/spin.yaml`` through the generic framework, the
  command given per side by ``{program}`` (``spin.py`` or the compiled ``spin.c``), as
  ``record.py`` and ``endtoend.py`` run it; these can be stepped in lock-step.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from benchlab.ab import Side
from benchlab.ab.sides import side_job
from benchlab.api import plan_sweep
from benchlab.frameworks.base import JobContext, RunnerFramework, runner_invocation
from benchlab.harness.planner import plan
from benchlab.harness.jobrun import Job
from benchlab.spec import load
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.host import HostTarget

REPO = Path(__file__).resolve().parents[2]
BACKEND_DIR = REPO / "tests" / "ab"  # spin_backend.py: the same loop as examples/ab/spin.py
SPEC = REPO / "examples" / "ab" / "spin.yaml"
SPIN_PY = REPO / "examples" / "ab" / "spin.py"
SPIN_C = REPO / "examples" / "ab" / "spin.c"


class SpinFramework(RunnerFramework):
    """benchlab's runner with the spin backend; the slowdown is a framework option."""

    name = "spin"

    def invocations(self, ctx: JobContext) -> list:
        return [runner_invocation(ctx, backend="spin_backend:SpinBackend", model_path=None,
                                  options=ctx.config.options)]


def runner_jobs(workdir: Path, blocks: int = 30, warmup: int = 3, timeout: int = 120
                ) -> list[Job]:
    """The one spin job as a runner framework: ``blocks`` timed calls, ``warmup`` first."""
    spec = workdir / "spin-runner.json"
    spec.write_text(json.dumps({
        "model": {"name": "spin", "format": "script"},
        "tests": [{"identifier": "default", "warmup": warmup, "iter": blocks,
                   "timeout": timeout, "env": {"PYTHONPATH": str(BACKEND_DIR)}}],
    }))
    (loaded,) = load(spec)
    sweep = plan([loaded], HostTarget(), frameworks=[FrameworkConfig("generic", {})])
    return [job.__class__(job.identity, job.spec, job.test, FrameworkConfig("spin", {}),
                          SpinFramework()) for job in sweep.jobs]


def runner_side(label: str, slowdown: float) -> Side:
    """A side of the in-process pair: the spin backend with ``slowdown`` more work."""
    return Side(label, framework=FrameworkConfig("spin", {"slowdown": slowdown}))


def runner_pair(workdir: Path, control: float, treatment: float, blocks: int = 30,
                warmup: int = 3) -> tuple[Job, Job]:
    """(control, treatment) jobs of one in-process session, as ``compare_jobs`` makes them."""
    (base,) = runner_jobs(workdir, blocks, warmup)
    return (side_job(base, runner_side("A", control), "control"),
            side_job(base, runner_side("B", treatment), "treatment"))


def program_jobs(workdir: Path, blocks: int = 30, warmup: int = 3) -> list[Job]:
    """examples/ab/spin.yaml through the generic framework: ``blocks`` iterations (one per
    block in lock-step), ``warmup`` first."""
    sweep = plan_sweep([SPEC], cache_dir=workdir / "cache")
    return [replace(job, test=replace(job.test, iter=blocks, warmup=warmup))
            for job in sweep.jobs]


def program_side(label: str, program: str, slowdown: float) -> Side:
    """A side that runs ``program`` (a command line) with ``--slowdown``."""
    return Side(label, string_map={"program": f"{program} --slowdown {slowdown}"})


def python_program() -> str:
    """spin.py under this interpreter (absolute paths: each process has its own workdir)."""
    return f"{sys.executable} {SPIN_PY}"


def build_spin_c(out_dir: Path) -> str:
    """Compile examples/ab/spin.c with ``cc -O2`` and benchlab's step header; the binary."""
    from benchlab.protocol.step import include_dir

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("no C compiler (cc) on PATH: spin.c cannot be built")
    binary = out_dir / "spin"
    subprocess.run([compiler, "-O2", "-std=c99", f"-I{include_dir()}", str(SPIN_C), "-o",
                    str(binary)], check=True)
    return str(binary)
