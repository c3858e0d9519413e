"""Run a framework's availability check in a fresh interpreter and report what it imported."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
from benchlab.plugins import load_framework
framework = load_framework(sys.argv[1])
result = framework.availability()
print(json.dumps({"ok": result.ok, "version": result.version,
                  "imported": sorted(m for m in sys.argv[2:] if m in sys.modules)}))
"""


def probe(framework: str, *modules: str) -> dict[str, object]:
    """``ok``/``version`` of the framework and which of ``modules`` got imported doing so."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, framework, *modules],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])
