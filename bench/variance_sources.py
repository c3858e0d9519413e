"""Where does the spread between identical processes come from?

The interval benchlab prints rests on the spread of a cell's process medians (docs/statistics.md):
fresh processes of one cell, identical in every setting, run at different levels. This script
measures that spread on real cells (MobileNetV2 and MiniLM on ONNX Runtime fp32 and int8,
ExecuTorch XNNPACK, OpenVINO and PyTorch eager) while switching one candidate cause at a time:

* ``baseline``: the zoo's default test, measured in rounds, parent quiet (``-q``);
* ``aslr_off``: address-space randomisation off (``setarch -R``: ``personality(ADDR_NO_RANDOMIZE)``,
  inherited by every runner process), so every process gets the same memory layout;
* ``hugepages``: glibc's allocator asks for transparent huge pages (``GLIBC_TUNABLES=
  glibc.malloc.hugetlb=1``), so big buffers do not land on 4 KiB pages by chance;
* ``threads1``: one intra-op thread (``--threads 1``), below the VM's two vCPUs;
* ``pinned``: one thread, and the runner pinned to one vCPU (``--cpu-list 1``);
* ``neighbour``: a neighbour on the machine, busy 5 ms in every 50 ms (the parent's own work, a
  progress bar, the VM's background, at a modest dose);
* ``long``: four times the iterations per process (``--iter 120 --min-time 1.2``);
* ``jobs``: each cell's processes back to back (``--order jobs``) instead of in rounds.

For each variant and cell: the standard deviation of the log process medians (``s``, the
spread the interval is built on), the within-process share of it (each process median's own
sampling variance, from its iterations: what more processes at the same iteration count cannot
remove), and the pooled ``s`` over the cells with its chi-square 95% interval. The variance ratio
against the baseline, with an F interval, says how much of the spread a variant removes.

``--analyse FILE`` re-reads an earlier result; ``--smoke`` runs a tiny version.
Writes ``bench/results/variance_sources.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result  # noqa: E402

from benchlab.schema.result import LATENCY_KEY  # noqa: E402

MODELS = "mobilenet_v2,minilm"
FRAMEWORKS = ("onnxruntime", "executorch:delegate=xnnpack", "openvino", "pytorch:mode=eager")

#: variant -> (command prefix, extra environment, extra benchlab run arguments)
VARIANTS: dict[str, tuple[tuple[str, ...], dict[str, str], tuple[str, ...]]] = {
    "baseline": ((), {}, ()),
    "aslr_off": (("setarch", platform.machine(), "-R"), {}, ()),
    "hugepages": ((), {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}, ()),
    "threads1": ((), {}, ("--threads", "1")),
    "pinned": ((), {}, ("--threads", "1", "--cpu-list", "1")),
    "neighbour": ((), {}, ()),
    "long": ((), {}, ("--iter", "120", "--min-time", "1.2")),
    "jobs": ((), {}, ("--order", "jobs")),
}

#: The neighbour: busy this long in every period (seconds).
NEIGHBOUR_BUSY_S, NEIGHBOUR_PERIOD_S = 0.005, 0.050


def _extra(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS),
                        choices=list(VARIANTS), help="which variants to run (default: all)")
    parser.add_argument("--processes", type=int, default=8, help="processes per cell")
    parser.add_argument("--analyse", type=Path, default=None,
                        help="re-read this earlier result instead of running")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep each variant's JSON directory under here")


def _neighbour() -> subprocess.Popen[bytes]:
    code = ("import time\nwhile True:\n    end = time.perf_counter() + %r\n"
            "    while time.perf_counter() < end: pass\n    time.sleep(%r)\n"
            % (NEIGHBOUR_BUSY_S, NEIGHBOUR_PERIOD_S - NEIGHBOUR_BUSY_S))
    return subprocess.Popen([sys.executable, "-c", code])


def _run_variant(name: str, processes: int, smoke: bool, where: Path) -> dict[str, Any]:
    prefix, env_extra, args = VARIANTS[name]
    out = where / name
    argv = [*prefix, sys.executable, "-m", "benchlab", "run", "-q", "--db", str(where / "db"),
            "--json-dir", str(out), "--models", "mlp" if smoke else MODELS,
            "--repeat", str(processes)]
    for framework in (("onnxruntime",) if smoke else FRAMEWORKS):
        argv += ["-f", framework]
    if smoke:
        argv += ["--iter", "5", "--min-time", "0"]
    argv += list(args)
    neighbour = _neighbour() if name == "neighbour" else None
    began = time.monotonic()
    try:
        done = subprocess.run(argv, env={**os.environ, **env_extra}, capture_output=True,
                              text=True, check=False)
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    wall = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(f"variant {name}: benchlab run exited {done.returncode}\n"
                         f"{done.stderr[-2000:]}")
    return {"wall_s": wall, "cells": _cells(out)}


def _cells(out: Path) -> dict[str, Any]:
    """Per cell: each process's median latency and its own sampling variance (log scale)."""
    cells: dict[str, Any] = {}
    for path in sorted(out.rglob("*.json")):
        result = json.loads(path.read_text())
        if result.get("status") != "ok":
            continue
        by_process: dict[int, list[float]] = {}
        for sample in result.get("samples", []):
            if f"{sample['type']} {sample['metric']}" == LATENCY_KEY:
                by_process.setdefault(sample["repetition"], []).append(sample["value"])
        medians, within = [], []
        costs = {"import_ms": [], "load_ms": []}
        for sample in result.get("samples", []):
            key = {"import_time": "import_ms", "load_time": "load_ms"}.get(sample["metric"])
            if key and sample["type"] == "NET":
                costs[key].append(sample["value"])
        for values in (by_process[k] for k in sorted(by_process)):
            logs = np.log(np.asarray(values, dtype=float))
            medians.append(float(np.exp(np.median(logs))))
            # Sampling variance of a median: pi/2 * var / n (normal approximation, robust sd).
            mad = float(np.median(np.abs(logs - np.median(logs)))) * 1.4826
            within.append(math.pi / 2 * mad ** 2 / len(logs))
        identity = result["identity"]
        config = ",".join(f"{k}={v}" for k, v in sorted(identity["framework_config"].items()))
        label = f"{identity['model_name']} @ {identity['framework']}" + (
            f"[{config}]" if config else "")
        cells[label] = {"process_p50s": medians, "within_var": within, **costs}
    return cells


def _cell_spread(cell: dict[str, Any]) -> dict[str, float]:
    logs = np.log(cell["process_p50s"])
    k = len(logs)
    s2 = float(np.var(logs, ddof=1)) if k > 1 else float("nan")
    within = float(np.mean(cell["within_var"]))
    return {"k": k, "s": math.sqrt(s2), "within_share": min(within / s2, 1.0) if s2 > 0 else 1.0,
            "range": float(np.max(logs) - np.min(logs))}


def _pooled(cells: dict[str, Any]) -> dict[str, float]:
    """Pooled between-process sd over the cells, with its chi-square 95% interval."""
    ss, df, within = 0.0, 0, 0.0
    for cell in cells.values():
        logs = np.log(cell["process_p50s"])
        if len(logs) < 2:
            continue
        ss += float(np.sum((logs - logs.mean()) ** 2))
        df += len(logs) - 1
        within += float(np.mean(cell["within_var"])) * (len(logs) - 1)
    if df == 0:
        return {"s": float("nan"), "df": 0}
    s2 = ss / df
    low = math.sqrt(ss / sps.chi2.ppf(0.975, df))
    high = math.sqrt(ss / sps.chi2.ppf(0.025, df))
    return {"s": math.sqrt(s2), "s_low": low, "s_high": high, "df": df,
            "within_share": min(within / df / s2, 1.0) if s2 > 0 else 1.0}


def _ratio(var: dict[str, float], base: dict[str, float]) -> dict[str, float]:
    """Variance ratio variant/baseline with its F 95% interval."""
    if not var.get("df") or not base.get("df"):
        return {}
    f = (var["s"] / base["s"]) ** 2
    lo = f / sps.f.ppf(0.975, var["df"], base["df"])
    hi = f / sps.f.ppf(0.025, var["df"], base["df"])
    return {"variance_ratio": f, "low": lo, "high": hi}


def analyse(runs: dict[str, Any]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    base = _pooled(runs["baseline"]["cells"]) if "baseline" in runs else None
    for name, run in runs.items():
        pooled = _pooled(run["cells"])
        row = {"wall_s": run["wall_s"], "pooled": pooled,
               "cells": {label: _cell_spread(c) for label, c in run["cells"].items()}}
        if base is not None and name != "baseline":
            row["against_baseline"] = _ratio(pooled, base)
        table[name] = row
    return table


def _print(table: dict[str, Any]) -> None:
    print(f"{'variant':<10} {'wall':>6} {'pooled s':>9} {'95% interval':>16} {'within':>7} "
          f"{'var/base':>9} {'95% interval':>16}")
    for name, row in table.items():
        p = row["pooled"]
        ratio = row.get("against_baseline") or {}
        r = (f"{ratio['variance_ratio']:9.2f} [{ratio['low']:5.2f}, {ratio['high']:5.2f}]"
             if ratio else "")
        print(f"{name:<10} {row['wall_s']:6.0f} {p['s'] * 100:8.2f}% "
              f"[{p.get('s_low', 0) * 100:5.2f}, {p.get('s_high', 0) * 100:5.2f}]% "
              f"{p.get('within_share', 0) * 100:6.0f}% {r}")
    print()
    labels = sorted({label for row in table.values() for label in row["cells"]})
    names = list(table)
    print("per cell s (%):" + "".join(f" {n[:9]:>9}" for n in names))
    for label in labels:
        print(f"  {label[:60]:<60}" + "".join(
            f" {table[n]['cells'][label]['s'] * 100:9.2f}" if label in table[n]["cells"]
            else f" {'':>9}" for n in names))


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, repeats=None, extra=_extra)
    if args.analyse is not None:
        runs = json.loads(args.analyse.read_text())["figures"]["runs"]
    else:
        runs = {}
        processes = 3 if args.smoke else args.processes
        with tempfile.TemporaryDirectory(prefix="variance-sources-") as tmp:
            where = args.keep or Path(tmp)
            for name in (("baseline", "jobs") if args.smoke else args.variants):
                print(f"variant {name} ...", flush=True)
                runs[name] = _run_variant(name, processes, args.smoke, where)
                if not args.smoke:  # after each variant: a later failure loses nothing
                    write_result("variance_sources", args,
                                 {"runs": runs, "analysis": analyse(runs)})
    table = analyse(runs)
    _print(table)
    if not args.smoke and args.analyse is None:
        write_result("variance_sources", args, {"runs": runs, "analysis": table})


if __name__ == "__main__":
    main()
