"""CLI start-up: wall time of ``benchlab --help`` and ``benchlab results list``.

Each command runs as a fresh process, interleaved with ``python -c pass`` (the interpreter's
own floor) so that drift of a shared machine hits every command alike. The script also records
which heavy modules the CLI imports: ``benchlab --help`` and ``benchlab results`` must never
load a runtime (torch, onnxruntime) or a data-frame library (pandas, pyarrow).

    python bench/cli_startup.py [--smoke] [--repeats N] [--out FILE]
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, spread, write_result

NAME = "cli_startup"
# Fresh processes per command in one repeat; the figure is over repeats × this many.
RUNS_PER_REPEAT = 10
SMOKE_RUNS_PER_REPEAT = 2
# Modules whose presence after start-up is a bug: a runtime or a data-frame stack.
FORBIDDEN = ("torch", "onnxruntime", "pandas", "pyarrow")
# Modules worth reporting: not wrong to import, but each costs start-up time.
HEAVY = (*FORBIDDEN, "numpy", "sqlalchemy", "pydantic", "yaml", "rich", "typer", "click")

# Runs a CLI command in-process, then lists the top-level modules it had imported, whatever
# way the command ended (main() always raises SystemExit).
_PROBE = """
import json, sys
sys.argv = ["benchlab", *json.loads(sys.argv[1])]
from benchlab.cli.commands import main
try:
    main()
except SystemExit:
    pass
finally:
    sys.__stderr__.write("\\nMODULES " + json.dumps(sorted({m.split('.')[0] for m in sys.modules})) + "\\n")
"""


def _benchlab_command() -> list[str]:
    """The installed console script beside this interpreter, else ``python -m benchlab``."""
    script = Path(sys.executable).with_name("benchlab")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "benchlab"]


def _timed(argv: list[str]) -> float:
    """Wall seconds of one fresh process; a failing command is an error, not a figure."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        argv, check=False, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return elapsed


def imported_modules(cli_args: list[str]) -> list[str]:
    """Top-level modules a fresh process has imported after running ``benchlab <cli_args>``."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(cli_args)],
        check=False,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    for line in reversed(proc.stderr.splitlines()):
        if line.startswith("MODULES "):
            return json.loads(line[len("MODULES ") :])
    raise SystemExit(f"probe of {cli_args} printed no module list:\n{proc.stderr[-2000:]}")


def import_profile(statement: str, top: int = 8) -> dict[str, object]:
    """Where ``statement`` spends its import time (``python -X importtime``).

    ``benchlab_ms`` is the cumulative time of the statement's top-level benchlab imports;
    ``packages`` ranks the third-party top-level packages by cumulative time (each counted
    once, where it was first imported, which is how ``-X importtime`` attributes it).
    """
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        check=False,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    benchlab_us = 0
    packages: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|( *)(\S+)", line)
        if not match:
            continue
        cumulative_us, depth, module = int(match[2]), len(match[3]), match[4]
        if depth == 1 and module.startswith("benchlab"):
            benchlab_us += cumulative_us
        if "." not in module and module != "benchlab" and cumulative_us >= 1000:
            packages[module] = max(packages.get(module, 0), cumulative_us)
    ranked = sorted(packages.items(), key=lambda kv: -kv[1])[:top]
    return {
        "benchlab_ms": benchlab_us / 1000.0,
        "packages": [{"module": m, "cumulative_ms": us / 1000.0} for m, us in ranked],
    }


def main() -> None:
    """Measure, print a table, write the JSON result."""
    args = parse_args(__doc__.splitlines()[0])
    runs = SMOKE_RUNS_PER_REPEAT if args.smoke else RUNS_PER_REPEAT
    tmp = Path(tempfile.mkdtemp(prefix="benchlab-cli-startup-"))
    try:
        db = tmp / "results.db"
        cli = _benchlab_command()
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "benchlab --help": [*cli, "--help"],
            "benchlab results list": [*cli, "results", "list", "--db", str(db)],
        }
        # One untimed call each: creates the store and warms the page cache.
        for argv in commands.values():
            _timed(argv)
        samples: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for i in range(args.repeats * runs):
            # Rotate the order so no command always runs right after the same neighbour.
            shift = i % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(_timed(commands[name]) * 1000.0)

        modules = {
            "benchlab --help": imported_modules(["--help"]),
            "benchlab results list": imported_modules(["results", "list", "--db", str(db)]),
        }
        heavy = {cmd: [m for m in HEAVY if m in mods] for cmd, mods in modules.items()}
        forbidden = {cmd: [m for m in FORBIDDEN if m in mods] for cmd, mods in modules.items()}
        no_runtime = not any(forbidden.values())
        profile = import_profile("import benchlab.cli.commands")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    floor = statistics.median(samples["python -c pass"])
    figures = {
        "runs_per_repeat": runs,
        "wall_ms": {name: spread(values) for name, values in samples.items()},
        "over_floor_ms": {
            name: statistics.median(values) - floor
            for name, values in samples.items()
            if name != "python -c pass"
        },
        "heavy_modules_imported": heavy,
        "forbidden_modules_imported": forbidden,
        "no_runtime_imported": no_runtime,
        "importtime_benchlab_cli": profile,
    }
    assert all(math.isfinite(v) for s in figures["wall_ms"].values() for v in s.values())

    print(f"{'command':<24} {'min ms':>8} {'median':>8} {'max':>8} {'over floor':>11}")
    for name, stats in figures["wall_ms"].items():
        over = figures["over_floor_ms"].get(name)
        over_text = f"{over:>11.0f}" if over is not None else f"{'-':>11}"
        print(
            f"{name:<24} {stats['min']:>8.0f} {stats['median']:>8.0f} {stats['max']:>8.0f}"
            f"{over_text}"
        )
    for cmd, mods in heavy.items():
        print(f"{cmd}: imports {', '.join(mods) or 'none of the heavy modules'}")
    print(
        f"import benchlab.cli.commands: {profile['benchlab_ms']:.0f} ms of imports; costliest packages: "
        + ", ".join(f"{p['module']} {p['cumulative_ms']:.0f}" for p in profile["packages"][:6])
    )
    out = write_result(NAME, args, figures)
    print(f"wrote {out}")
    if not no_runtime:
        print(f"ERROR: the CLI imported {forbidden}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
