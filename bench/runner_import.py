"""What a runner process's ``import_time`` holds, and its fixed cost, per framework.

``python -m benchlab.runner`` imports ``benchlab.runner.loop`` and then times the import of the
framework's backend module; that time is reported as ``import_time``. For each framework this
script starts a fresh interpreter that does the same two steps and reports:

* ``import``: the timed step, ``importlib.import_module(<backend>)`` (ms);
* ``process``: the whole interpreter, spawn to exit, as the parent sees it (ms);
* the benchlab modules the timed step loaded (from ``sys.modules``).

``--baseline SRC`` measures another checkout's ``src`` directory the same way, alternating with
this one inside every repeat (ABAB...), so that before and after are measured side by side on
the same noisy machine and compared as ratios.

    python bench/runner_import.py [--repeats N] [--baseline OLD/src] [--smoke] [--out FILE]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, spread, write_result

NAME = "runner_import"
SRC = Path(__file__).resolve().parents[1] / "src"
BACKENDS = {
    "pytorch": "benchlab.frameworks.pytorch.backend",
    "onnxruntime": "benchlab.frameworks.onnxruntime.backend",
    "tflite": "benchlab.frameworks.tflite.backend",
    "executorch": "benchlab.frameworks.executorch.backend",
    "openvino": "benchlab.frameworks.openvino.backend",
}
_PROBE = """
import importlib, json, sys, time
import benchlab.runner.loop
before = set(sys.modules)
t0 = time.perf_counter_ns()
importlib.import_module(sys.argv[1])
ms = (time.perf_counter_ns() - t0) / 1e6
new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] == "benchlab")
print(json.dumps({"import": ms, "benchlab_modules": new}))
"""


def probe(src: Path, module: str) -> dict[str, Any]:
    """One fresh interpreter importing ``module`` from the benchlab in ``src``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(src), os.environ.get("PYTHONPATH")) if p)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _PROBE, module], capture_output=True,
                          text=True, timeout=300, check=True, env=env)
    wall = (time.perf_counter() - t0) * 1000
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "process": wall}


def main() -> None:
    argv = sys.argv[1:]
    baseline = None
    if "--baseline" in argv:
        at = argv.index("--baseline")
        baseline = Path(argv[at + 1]).resolve()
        del argv[at:at + 2]
    parser_args = parse_args(__doc__.splitlines()[0], argv)
    repeats = 1 if parser_args.smoke else parser_args.repeats
    backends = dict(list(BACKENDS.items())[:1]) if parser_args.smoke else BACKENDS
    trees = {"this": SRC, **({"baseline": baseline} if baseline else {})}
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        t: {f: [] for f in backends} for t in trees}
    for _ in range(repeats):
        for framework, module in backends.items():
            for tree, src in trees.items():
                runs[tree][framework].append(probe(src, module))
    figures: dict[str, Any] = {}
    print(f"{'framework':12} {'tree':9} {'import ms':>10} {'process ms':>11}  benchlab modules")
    for framework in backends:
        for tree in trees:
            samples = runs[tree][framework]
            cell = {"import": spread([s["import"] for s in samples]),
                    "process": spread([s["process"] for s in samples]),
                    "benchlab_modules": len(samples[-1]["benchlab_modules"])}
            figures[f"{framework}/{tree}"] = cell
            print(f"{framework:12} {tree:9} {cell['import']['median']:10.0f} "
                  f"{cell['process']['median']:11.0f}  {cell['benchlab_modules']}")
        if baseline:
            ratios = {k: figures[f"{framework}/this"][k]["median"]
                      / figures[f"{framework}/baseline"][k]["median"]
                      for k in ("import", "process")}
            figures[f"{framework}/ratio"] = ratios
            print(f"{framework:12} {'ratio':9} {ratios['import']:10.2f} {ratios['process']:11.2f}")
    write_result(NAME, parser_args, figures)


if __name__ == "__main__":
    main()
