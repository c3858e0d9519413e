"""Suite cost: where the test command's time goes, per test, per fixture, per kind of work.

Runs pytest over the suite (the README's test command by default, or the pytest arguments after
``--``) with bench/suite_cost_plugin.py loaded, then prints and keeps:

* the wall time of the run, the sum of every test's phases and, under xdist, each worker's busy
  time (so the parallel speed-up and an idle worker both show);
* the slowest tests, each split into setup, call and teardown, the CPU time of pytest itself and
  of its reaped child processes, the main thread's sleeps, and the child processes it started;
* the costliest fixtures (a session fixture's one-off setup shows apart from its users);
* the totals per test module and per kind of child process, and which test paid for importing
  each runtime first;
* with ``--accounting`` (root on Linux), every process's CPU from the kernel's process
  accounting, each charged to the test it ran beside (bench/process_accounting.py): exact where
  the reaped-children figures above are not (a background export, a server stopped later).

    python bench/suite_cost.py                        # the whole suite as README runs it
    python bench/suite_cost.py --accounting           # ... with every process accounted
    python bench/suite_cost.py -- -n 0 tests/zoo      # any pytest arguments

Results go to ``bench/results/suite_cost.json``; docs/performance.md §15 has the figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import QUICK_TESTS, parse_args, write_result
from process_accounting import TestWindow, accounting, charge, module_totals, read_records

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
#: What the suite's own budget plugin measured (tests/suite_budget.py: CPU time, the builds
#: before the tests, the cost in reference CPU minutes), beside the per-worker files.
BUDGET_FILE = "suite_budget.json"


def _options(parser) -> None:  # noqa: ANN001 - argparse's parser
    parser.add_argument("--top", type=int, default=25, help="how many tests and fixtures to list")
    parser.add_argument("--accounting", action="store_true",
                        help="charge every process's CPU to its test with the kernel's process "
                             "accounting (root, Linux; measure with nothing else running)")
    parser.add_argument("pytest_args", nargs="*", help="pytest arguments (after --)")


def run_suite(pytest_args: list[str], out_dir: Path) -> tuple[int, float, str]:
    """One pytest process with the cost plugin; its exit status, wall time and last lines."""
    # bench/ first, for the plugin; whatever the caller had after it.
    paths = [str(BENCH), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    command = [sys.executable, "-m", "pytest", "-p", "suite_cost_plugin",
               f"--suite-cost-dir={out_dir}", f"--suite-budget-out={out_dir / BUDGET_FILE}",
               *pytest_args]
    started = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    tail = "\n".join(proc.stdout.splitlines()[-40:])
    return proc.returncode, wall, tail


def _total(row: dict[str, Any], key: str) -> float:
    return sum(phase.get(key, 0.0) for phase in row["phases"].values())


def summarise(out_dir: Path, wall_s: float, top: int) -> dict[str, Any]:
    workers = [json.loads(path.read_text()) for path in sorted(out_dir.glob("*.json"))
               if path.name != BUDGET_FILE]
    tests: dict[str, dict[str, Any]] = {}
    fixtures: list[dict[str, Any]] = []
    for worker in workers:
        tests.update(worker["tests"])
        fixtures += worker["fixtures"]
    rows = []
    for nodeid, row in tests.items():
        processes = row["processes"]
        rows.append({
            "test": nodeid, "worker": row["worker"], "outcome": row["outcome"],
            "wall_s": round(_total(row, "wall_s"), 2),
            "setup_s": round(row["phases"].get("setup", {}).get("wall_s", 0.0), 2),
            "call_s": round(row["phases"].get("call", {}).get("wall_s", 0.0), 2),
            "teardown_s": round(row["phases"].get("teardown", {}).get("wall_s", 0.0), 2),
            "cpu_s": round(_total(row, "cpu_s"), 2),
            "children_cpu_s": round(_total(row, "children_cpu_s"), 2),
            "sleep_s": round(_total(row, "sleep_s"), 2),
            "processes": dict(processes), "imported": row["imported"]})
    rows.sort(key=lambda r: -r["wall_s"])
    modules: dict[str, float] = defaultdict(float)
    module_cpu: dict[str, float] = defaultdict(float)
    for row in rows:
        modules[row["test"].split("::")[0]] += row["wall_s"]
        module_cpu[row["test"].split("::")[0]] += row["cpu_s"] + row["children_cpu_s"]
    kinds: dict[str, int] = defaultdict(int)
    for row in rows:
        for kind, n in row["processes"].items():
            kinds[kind] += n
    fixture_totals: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for fix in fixtures:
        fixture_totals[(fix["fixture"], fix["scope"], fix["baseid"])].append(fix["wall_s"])
    fixture_rows = sorted(
        ({"fixture": name, "scope": scope, "defined_in": baseid or "(plugin)",
          "setups": len(times), "total_s": round(sum(times), 2), "max_s": round(max(times), 2)}
         for (name, scope, baseid), times in fixture_totals.items()),
        key=lambda r: -r["total_s"])
    busy = {w["worker"]: round(sum(_total(t, "wall_s") for t in w["tests"].values()), 1)
            for w in workers}
    return {
        "wall_s": round(wall_s, 1),
        "tests": len(rows),
        "outcomes": {o: sum(r["outcome"] == o for r in rows) for o in
                     ("passed", "failed", "error", "skipped")},
        "sum_of_tests_s": round(sum(r["wall_s"] for r in rows), 1),
        "worker_busy_s": busy,
        "setup_s": round(sum(r["setup_s"] for r in rows), 1),
        "call_s": round(sum(r["call_s"] for r in rows), 1),
        "teardown_s": round(sum(r["teardown_s"] for r in rows), 1),
        "pytest_cpu_s": round(sum(r["cpu_s"] for r in rows), 1),
        "children_cpu_s": round(sum(r["children_cpu_s"] for r in rows), 1),
        "main_thread_sleep_s": round(sum(r["sleep_s"] for r in rows), 1),
        "processes_by_kind": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        # A module's CPU: its tests' own and their reaped children's, module fixtures included
        # (they are set up in the module's first test).
        "modules": [{"module": m, "wall_s": round(s, 1), "cpu_s": round(module_cpu[m], 1)}
                    for m, s in sorted(modules.items(), key=lambda kv: -module_cpu[kv[0]])],
        "slowest": rows[:top],
        "fixtures": fixture_rows[:top],
        "first_imports": {name: r["test"] for r in rows for name in r["imported"]},
        "all_tests": [{k: r[k] for k in ("test", "worker", "outcome", "wall_s", "setup_s",
                                         "call_s", "teardown_s", "cpu_s", "children_cpu_s",
                                         "sleep_s", "processes")} for r in rows],
    }


def accounted(out_dir: Path, top: int) -> dict[str, Any]:
    """Every process of the run charged to a test (bench/process_accounting.py)."""
    windows = []
    for path in sorted(out_dir.glob("*.json")):
        if path.name == BUDGET_FILE:
            continue
        worker = json.loads(path.read_text())
        windows += [TestWindow(test, worker["pid"], *row["clock"])
                    for test, row in worker["tests"].items() if row["clock"][1] is not None]
    charged = charge(read_records(out_dir / "processes.pacct"), windows)
    tests = sorted(charged.per_test.items(), key=lambda kv: -kv[1])
    return {
        "total_cpu_s": round(charged.total_s, 1),
        "workers_cpu_s": round(charged.workers_s, 1),
        "tests_processes_cpu_s": round(sum(charged.per_test.values()), 1),
        "unowned_cpu_s": round(charged.unowned_s, 1),
        "by_command": {k: round(v, 1) for k, v in sorted(charged.per_command.items(),
                                                         key=lambda kv: -kv[1])[:top]},
        "modules": [{"module": m, "cpu_s": round(v, 1)}
                    for m, v in module_totals(charged.per_test).items()],
        "tests": [{"test": t, "cpu_s": round(v, 2)} for t, v in tests],
    }


def print_summary(figures: dict[str, Any], top: int) -> None:
    print(f"wall {figures['wall_s']} s; {figures['tests']} tests {figures['outcomes']}; "
          f"sum of tests {figures['sum_of_tests_s']} s; busy per worker {figures['worker_busy_s']}")
    print(f"setup {figures['setup_s']} s, call {figures['call_s']} s, teardown "
          f"{figures['teardown_s']} s; pytest CPU {figures['pytest_cpu_s']} s, children's CPU "
          f"{figures['children_cpu_s']} s, main-thread sleeps {figures['main_thread_sleep_s']} s")
    print(f"child processes: {figures['processes_by_kind']}")
    print("\n| test | wall s | setup | call | teardown | own CPU | children CPU | sleep | "
          "processes |\n|---|---|---|---|---|---|---|---|---|")
    for r in figures["slowest"][:top]:
        procs = ", ".join(f"{k} {n}" for k, n in r["processes"].items())
        print(f"| {r['test']} | {r['wall_s']} | {r['setup_s']} | {r['call_s']} | "
              f"{r['teardown_s']} | {r['cpu_s']} | {r['children_cpu_s']} | {r['sleep_s']} | "
              f"{procs} |")
    print("\n| fixture | scope | setups | total s | max s |\n|---|---|---|---|---|")
    for f in figures["fixtures"][:top]:
        print(f"| {f['fixture']} ({f['defined_in']}) | {f['scope']} | {f['setups']} | "
              f"{f['total_s']} | {f['max_s']} |")
    print("\n| module | wall s | CPU s |\n|---|---|---|")
    for m in figures["modules"][:top]:
        print(f"| {m['module']} | {m['wall_s']} | {m['cpu_s']} |")
    print(f"\nfirst imports: {figures['first_imports']}")
    counted = figures.get("accounted")
    if counted:
        print(f"\nprocess accounting: {counted['total_cpu_s']} CPU s in all: pytest's own "
              f"{counted['workers_cpu_s']}, its tests' processes "
              f"{counted['tests_processes_cpu_s']}, owned by no test {counted['unowned_cpu_s']}; "
              f"by command {counted['by_command']}")
        print("\n| test (processes it started) | CPU s |\n|---|---|")
        for row in counted["tests"][:top]:
            print(f"| {row['test']} | {row['cpu_s']} |")
        print("\n| module (processes its tests started) | CPU s |\n|---|---|")
        for row in counted["modules"][:top]:
            print(f"| {row['module']} | {row['cpu_s']} |")
    budget = figures.get("suite_budget")
    if budget:
        cost = budget["cost"] or {}
        print(f"suite budget: CPU {(budget['pytest_cpu_s'] + budget['children_cpu_s']) / 60:.1f} "
              f"min, builds {budget['builds']}, cost {cost.get('minutes')} reference CPU "
              f"minutes (budget {cost.get('budget_minutes')})")


def main() -> int:
    args = parse_args(__doc__.splitlines()[0], repeats=1, extra=_options,
                      repeats_help="unused: one run of the suite")
    # The smoke runs two workers, so the merging of their records is exercised too.
    pytest_args = ["-n", "2", *QUICK_TESTS] if args.smoke else args.pytest_args
    with tempfile.TemporaryDirectory(prefix="suite-cost-") as tmp:
        if args.accounting:
            with accounting(Path(tmp) / "processes.pacct") as on:
                if not on:
                    sys.exit("suite_cost: the kernel refused process accounting (it needs "
                             "root and CONFIG_BSD_PROCESS_ACCT)")
                status, wall, tail = run_suite(pytest_args, Path(tmp))
        else:
            status, wall, tail = run_suite(pytest_args, Path(tmp))
        print(tail)
        figures = summarise(Path(tmp), wall, args.top)
        if args.accounting:
            figures["accounted"] = accounted(Path(tmp), args.top)
        budget = Path(tmp) / BUDGET_FILE
        figures["suite_budget"] = json.loads(budget.read_text()) if budget.exists() else None
    figures["pytest_args"] = pytest_args
    figures["exit_status"] = status
    print_summary(figures, args.top)
    out = write_result("suite_cost", args, figures)
    print(f"written to {out}")
    # A run that measured nothing or failed is no figure.
    return 0 if status == 0 and figures["tests"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
