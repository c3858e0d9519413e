"""Time to first result: README command 1's run, from a fresh cache and again from a warm one.

Runs ``benchlab run`` (the zoo's default models on every installed framework) as a user would,
with an empty artifact cache and store, and timestamps its stderr lines: the first measured
cell (a ``✓``/``✗`` line), the end of the exports and the end of the run. It then runs again
on the now warm cache. Separately it times the export phase alone with one export process
and with two, each on its own fresh cache, to show what running exports side by side buys.

    .venv/bin/python bench/first_run.py              # about 35 minutes on 2 cores
    .venv/bin/python bench/first_run.py --runs-only  # the fresh and warm runs, about 15
    .venv/bin/python bench/first_run.py --your-model # a user's small model vs convnet, ~3
    .venv/bin/python bench/first_run.py --smoke      # convnet and a user's model, one
                                                     # framework, the convnet run shared

Goals (issue 13, this 2-core machine): fresh cache, first cell within 3 minutes and the whole
run within 7; warm cache, the whole run within 4. Issue 40: a user's small model (under 1M
parameters, written here, never the zoo's) from a cold cache with ``-f all``, exports plus
measurement, within 2x the zoo's ``convnet`` on the same machine (``--your-model``).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result  # noqa: E402


def timed_run(cache: Path, db: Path, extra: list[str]) -> dict[str, Any]:
    """One ``benchlab run``: seconds to the first cell, to the last export line, to the end,
    and the seconds spent exporting (the run's own count, measurements between left out)."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "benchlab", "run", "--cache-dir", str(cache),
                             "--db", str(db), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first_cell = last_export = exporting = None
    cells = 0
    assert proc.stderr is not None
    for line in proc.stderr:
        now = time.monotonic() - start
        text = line.strip()
        if text.startswith(("✓", "✗")):
            cells += 1
            first_cell = first_cell if first_cell is not None else now
        elif "exports done: " in text:  # the session's own count, pauses left out
            exporting = float(text.split("exports done: ", 1)[1].split(" s", 1)[0])
        elif "exported " in text or "exporting " in text:
            last_export = now
    proc.wait()
    total = time.monotonic() - start
    return {"rc": proc.returncode, "first_cell_s": first_cell, "exports_end_s": last_export,
            "exporting_s": exporting, "total_s": total, "cells": cells}


def export_phase(workers: int, models: list[str], formats: list[str] | None = None) -> float:
    """Seconds to export ``models`` (to ``formats``, default each model's own) into a fresh
    cache with ``workers`` processes at once."""
    code = ("import sys, time; from pathlib import Path; from benchlab import zoo; "
            "from benchlab.spec.artifacts import ArtifactCache; t = time.monotonic(); "
            f"zoo.export_models({models!r}, ArtifactCache(Path(sys.argv[1])), "
            f"formats={formats!r}, workers={workers}); print(time.monotonic() - t)")
    with tempfile.TemporaryDirectory(prefix="benchlab-first-run-") as tmp:
        out = subprocess.run([sys.executable, "-c", code, tmp], capture_output=True, text=True,
                             check=True).stdout
    return float(out.strip().splitlines()[-1])


#: A user's model for ``--your-model``: 4 conv blocks and a linear head, about 0.6M
#: parameters at 3x128x128, the size and kind of the zoo's convnet (0.28M) but not its code.
USER_NET = """
import torch
from torch import nn


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.MaxPool2d(2))


class UserNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(block(3, 32), block(32, 64), block(64, 128),
                                      block(128, 256))
        self.head = nn.Linear(256, 100)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def build():
    return UserNet().eval()
"""


#: The smoke's runs: ONNX Runtime only (fp32 and int8), 3 calls in one process.
SMOKE_RUN = ["-f", "onnxruntime", "--iter", "3", "--min-time", "0", "--repeat", "1"]


def your_model_vs_convnet(smoke: bool, convnet: dict[str, Any] | None = None) -> dict[str, Any]:
    """``benchlab run --model usernet.py:build -f all`` and ``--models convnet -f all``, each
    from its own empty cache and store, side by side in time (the model first, then convnet).
    ``convnet``: that run of convnet, already made (the smoke's fresh run is the same command)."""
    quick = SMOKE_RUN if smoke else ["-f", "all"]
    with tempfile.TemporaryDirectory(prefix="benchlab-your-model-") as tmp:
        net = Path(tmp) / "usernet.py"
        net.write_text(USER_NET)
        mine = timed_run(Path(tmp) / "c1", Path(tmp) / "r1.db",
                         ["--model", f"{net}:build", "--input", "1x3x128x128", *quick])
        zoo = convnet or timed_run(Path(tmp) / "c2", Path(tmp) / "r2.db",
                                   ["--models", "convnet", *quick])
    run = {"model": mine, "convnet": zoo, "ratio": mine["total_s"] / zoo["total_s"]}
    print(f"your model: {mine['total_s']:.0f} s ({mine['cells']} cells), "
          f"convnet: {zoo['total_s']:.0f} s ({zoo['cells']} cells), ratio {run['ratio']:.2f}")
    return run


def main() -> None:
    runs_only = "--runs-only" in sys.argv
    your_model = "--your-model" in sys.argv
    args = parse_args(__doc__.splitlines()[0],
                      [a for a in sys.argv[1:] if a not in ("--runs-only", "--your-model")])
    figures: dict[str, Any] = {}
    if your_model:
        figures["your_model"] = your_model_vs_convnet(args.smoke)
        write_result("first_run_your_model", args, figures)
        return
    from benchlab.zoo import DEFAULT_MODELS

    # The smoke checks the plumbing: convnet, one process per cell (the race is tests/stats'
    # subject); its fresh run is also the zoo's side of the user-model comparison.
    extra = ["--models", "convnet", *SMOKE_RUN] if args.smoke else []
    models = ["mlp"] if args.smoke else list(DEFAULT_MODELS)
    # The smoke's export phase checks the plumbing: ONNX alone exports in seconds.
    formats = ["onnx"] if args.smoke else None
    with tempfile.TemporaryDirectory(prefix="benchlab-first-run-") as tmp:
        cache, db = Path(tmp) / "cache", Path(tmp) / "results.db"
        figures["fresh"] = timed_run(cache, db, extra)
        figures["warm"] = timed_run(cache, db, extra)
    if args.smoke:
        figures["your_model"] = your_model_vs_convnet(True, figures["fresh"])
    if not runs_only:
        # The smoke's one model makes both the same single export: it runs the second only.
        figures["exports_1_worker_s"] = None if args.smoke else export_phase(1, models, formats)
        figures["exports_2_workers_s"] = export_phase(2, models, formats)
    for name in ("fresh", "warm"):
        run = figures[name]
        first = run["first_cell_s"]
        print(f"{name:5s} cache: first cell {first if first is None else round(first)} s, "
              f"exports end {run['exports_end_s'] and round(run['exports_end_s'])} s "
              f"({run['exporting_s']} s exporting), "
              f"total {run['total_s']:.0f} s, {run['cells']} cells, rc {run['rc']}")
    if not runs_only and not args.smoke:
        print(f"export phase: {figures['exports_1_worker_s']:.0f} s with one process, "
              f"{figures['exports_2_workers_s']:.0f} s with two")
    write_result("first_run", args, figures)


if __name__ == "__main__":
    main()
