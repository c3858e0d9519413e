"""Which benchlab modules a real runner process loads.

The adapter's own runner command runs unchanged; a ``sitecustomize`` module put first on its
``PYTHONPATH`` writes ``sys.modules`` to a file when the process exits (``python -X importtime``
cannot tell: ``importlib.import_module``, which loads the backend, bypasses its timer).

A runner process reports the time to import its backend as ``import_time``. That figure must be
the runtime's: the process may load the runner (what ``benchlab.runner.loop`` imports), the
framework's backend and its plain option constants, and nothing of the harness (specs and their
pydantic models, targets, the adapter, the store).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlab.frameworks.base import Invocation
from benchlab.protocol.lines import parse_output

__all__ = ["assert_runner_loads_only_its_backend", "runner_modules"]


_OBSERVER = """
import atexit, json, os, sys

def _dump():
    with open(os.environ["BENCHLAB_TEST_MODULES_OUT"], "w") as out:
        json.dump(sorted(sys.modules), out)

atexit.register(_dump)
"""


def runner_modules() -> set[str]:
    """The benchlab modules that importing the runner loop loads, in a fresh interpreter."""
    probe = ("import json, sys, benchlab.runner.loop\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'benchlab')))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def assert_runner_loads_only_its_backend(invocation: Invocation, framework: str,
                                         forbidden: tuple[str, ...] = ()) -> float:
    """Run the adapter's runner command as it is and check which benchlab modules it loaded.

    ``forbidden`` names other packages the process must not load (a runtime's compiler stack).
    Returns the ``import_time`` (ms) the process reported.
    """
    argv = list(invocation.argv)
    assert argv[1:3] == ["-m", "benchlab.runner"], argv
    with tempfile.TemporaryDirectory(prefix="benchlab-observer-") as tmp:
        (Path(tmp) / "sitecustomize.py").write_text(_OBSERVER)
        out = Path(tmp) / "modules.json"
        path = os.pathsep.join(p for p in (tmp, os.environ.get("PYTHONPATH")) if p)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False,
                              env={**os.environ, **invocation.env, "PYTHONPATH": path,
                                   "BENCHLAB_TEST_MODULES_OUT": str(out)})
        assert proc.returncode == 0, proc.stderr[-3000:]
        everything = set(json.loads(out.read_text()))
    loaded = {m for m in everything if m.split(".")[0] == "benchlab"}
    unwanted = sorted(m for m in everything for f in forbidden if m == f or m.startswith(f + "."))
    assert not unwanted, f"the runner process loaded {unwanted[:10]}"
    package = f"benchlab.frameworks.{framework}"
    # The runner-side modules an adapter package may have (its backend and what only the
    # backend imports); never its adapter.py, which belongs to the harness.
    runner_side = ("backend", "options", "placement", "program", "layers")
    allowed = runner_modules() | {"benchlab.runner.__main__", "benchlab.frameworks",
                                  "benchlab.frameworks.lazy", package,
                                  *(f"{package}.{name}" for name in runner_side)}
    assert f"{package}.backend" in loaded
    assert loaded <= allowed, f"the runner process loaded {sorted(loaded - allowed)}"
    parsed = parse_output(proc.stdout)
    [import_ms] = [s.value for s in parsed.samples if s.metric == "import_time"]
    return import_ms
