"""Flake hunt: the test suite in shuffled orders, and the zoo's tests over and over.

A test that passes alone but fails after some other test depends on state that test left behind
(torch's thread count, a server, a file); one that fails one run in five depends on load or
timing. Neither shows in CI's fixed order until the day it fails there. This script runs:

* ``order``: the suite (``--scope all``) or its slow half (``--scope slow``, the end-to-end
  tests with real runtimes and processes) once per seed in ``--seeds``, shuffled by
  pytest-random-order (``--random-order-bucket``, ``package`` by default: modules shuffled within
  their package and tests within their module, so module fixtures are still built once);
* ``repeat``: ``tests/zoo`` (the zoo's architectures, exporters and int8 baseline) ``--repeats``
  times, each in its own global shuffle, so a test meets every neighbour.

Every pytest run is its own process. Reported per run: its seed, counts, wall time, the failed
tests with the first line of their message, and the tests that left torch's settings changed
(the suite puts them back; see tests/process_state.py), and the machine-dependent cases the
tests took on this CPU (docs/reproducibility.md). The script exits 1 when any run failed,
so it can gate. Results go to ``bench/results/flake_hunt.json``.

    python bench/flake_hunt.py --scope all --seeds 1,2 --repeats 3
    python bench/flake_hunt.py --scope all --seeds 1 --workers 0   # in one process

The runs use the suite's parallel workers (``--workers auto``, as the test command): a test that
depends on running alone, or that two workers' tests share a file, port or cache badly, fails
here as it would in CI.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

from _common import QUICK_TESTS, parse_args, write_result

ROOT = Path(__file__).resolve().parent.parent
# Headings of the summary sections tests/conftest.py writes.
LEAK_SECTION = "torch settings changed by a test"
CASES_SECTION = "machine-dependent cases taken"


@dataclass
class PytestRun:
    """One shuffled pytest process and what it found."""

    phase: str
    seed: int
    bucket: str
    selection: list[str]
    returncode: int
    wall_s: float
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)
    torch_leaks: list[str] = field(default_factory=list)
    machine_cases: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        # pytest exits 0 when all passed, 5 when nothing was collected: both are no verdict
        # for a hunt that must have run tests.
        return self.returncode == 0 and self.failed == 0 and self.errors == 0 and self.passed > 0


def _count(report: Path, run: PytestRun) -> None:
    """Fill the counts and failures of ``run`` from pytest's JUnit XML report."""
    root = ET.parse(report).getroot()
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        problem = next((c for c in case if c.tag in ("failure", "error")), None)
        if problem is not None:
            if problem.tag == "failure":
                run.failed += 1
            else:
                run.errors += 1
            first = (problem.get("message") or "").strip().splitlines()
            run.failures.append(f"{name}: {first[0][:300] if first else problem.tag}")
        elif any(c.tag == "skipped" for c in case):
            run.skipped += 1
        else:
            run.passed += 1


def _section(output: str, title: str) -> list[str]:
    """The lines of the pytest summary section whose heading contains ``title``."""
    lines, inside = [], False
    for line in output.splitlines():
        if title in line and line.startswith("="):
            inside = True
        elif inside and line.startswith("="):
            break
        elif inside and line.strip():
            lines.append(line.strip())
    return lines


def run_pytest(phase: str, seed: int, bucket: str, selection: list[str],
               workers: str = "auto") -> PytestRun:
    """One pytest run over ``selection`` (paths and ``-m`` options), shuffled by ``seed``, in
    ``workers`` parallel workers (pytest-xdist's ``-n``: ``auto`` as the suite runs, ``0`` for
    one process)."""
    with tempfile.TemporaryDirectory(prefix="flake-hunt-") as tmp:
        report = Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                   f"--numprocesses={workers}",
                   f"--random-order-seed={seed}", f"--random-order-bucket={bucket}",
                   f"--junitxml={report}", *selection]
        started = time.monotonic()
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        run = PytestRun(phase, seed, bucket, selection, proc.returncode,
                        round(time.monotonic() - started, 1))
        if report.exists():
            _count(report, run)
        else:
            run.failures.append(f"pytest wrote no report: {proc.stderr.strip()[-500:]}")
        run.torch_leaks = _section(proc.stdout, LEAK_SECTION)
        run.machine_cases = _section(proc.stdout, CASES_SECTION)
    verdict = "ok" if run.ok else "FAILED"
    print(f"{phase:6} seed {seed:<6} {bucket:8} -n {workers:4} {run.passed:5} passed "
          f"{run.failed:3} failed {run.errors:3} errors {run.skipped:3} skipped "
          f"{run.wall_s:8.1f} s  {verdict}",
          flush=True)
    for failure in run.failures:
        print(f"    {failure}", flush=True)
    return run


def _options(parser) -> None:  # noqa: ANN001 - argparse's parser
    parser.add_argument("--scope", choices=("all", "slow"), default="slow",
                        help="shuffle the whole suite or only its slow (end-to-end) half")
    parser.add_argument("--seeds", default="1",
                        help="comma-separated seeds, one shuffled run of --scope each")
    parser.add_argument("--bucket", default="package",
                        choices=("global", "package", "module", "class"),
                        help="pytest-random-order's bucket for the order runs")
    parser.add_argument("--no-repeat", action="store_true", help="skip the tests/zoo repeats")
    parser.add_argument("--tests", nargs="+", default=None, metavar="PATH",
                        help="shuffle these test files or folders instead of --scope")
    parser.add_argument("--workers", default="auto",
                        help="pytest-xdist workers per run: auto (as the test command runs), "
                             "0 (one process), or a number")


def main() -> int:
    args = parse_args(__doc__.splitlines()[0], repeats=3, extra=_options,
                      repeats_help="how many times tests/zoo runs, each in its own shuffle")
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    runs: list[PytestRun] = []
    if args.smoke:
        runs.append(run_pytest("order", seeds[0], "global", list(QUICK_TESTS), args.workers))
    else:
        selection = args.tests or (["tests"] if args.scope == "all" else ["tests", "-m", "slow"])
        runs += [run_pytest("order", seed, args.bucket, selection, args.workers)
                 for seed in seeds]
        if not args.no_repeat:
            runs += [run_pytest("repeat", 1000 + i, "global", ["tests/zoo"], args.workers)
                     for i in range(args.repeats)]
    failures = sorted({f for run in runs for f in run.failures})
    figures = {
        "scope": "smoke" if args.smoke else ("chosen tests" if args.tests else args.scope),
        "workers": args.workers,
        "runs": [{**asdict(run), "ok": run.ok} for run in runs],
        "all_ok": all(run.ok for run in runs),
        "distinct_failures": failures,
        "torch_leaks": sorted({leak for run in runs for leak in run.torch_leaks}),
        "machine_cases": sorted({case for run in runs for case in run.machine_cases}),
    }
    out = write_result("flake_hunt", args, figures)
    print(f"{sum(r.ok for r in runs)}/{len(runs)} runs passed; {len(failures)} distinct failures; "
          f"written to {out}")
    return 0 if figures["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
