"""What building for a phone costs: benchlab's llama.cpp runner for aarch64, cold and cached.

Builds into a fresh cache folder (the sources are downloaded from PyPI once into it), then
asks again and times the cache hit; with ``--llama-bench`` llama.cpp's ``llama-bench`` is
built too. Then, with ``--run``, the runner on llama_15m's GGUF file under
``qemu-aarch64-static`` for each core (Cortex-A53, Cortex-A76), figures labelled emulated.

    python bench/device_build.py                 # the runner alone
    python bench/device_build.py --llama-bench   # and llama-bench
    python bench/device_build.py --run FILE.gguf # and a generation on each emulated core

Results go to ``bench/results/device_build.json``; docs/performance.md §17 has the figures.
Measure with nothing else running: the build uses every core.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from benchlab.devicetools.llamacpp import BENCH, RUNNER, build_llama_tools


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-bench", action="store_true")
    parser.add_argument("--run", type=Path, help="a GGUF file to generate from, emulated")
    args = parser.parse_args()
    programs = (RUNNER, BENCH) if args.llama_bench else (RUNNER,)
    figures: dict[str, object] = {"cores": os.cpu_count(), "programs": list(programs)}
    with tempfile.TemporaryDirectory(prefix="benchlab-device-build-") as tmp:
        root = Path(tmp)
        started, cpu = time.monotonic(), _children_cpu()
        tools = build_llama_tools("aarch64", root, programs=programs, progress=print)
        figures["cold_s"] = round(time.monotonic() - started, 1)
        figures["cold_build_s"] = tools.facts["build_seconds"]
        figures["cold_cpu_s"] = round(_children_cpu() - cpu, 1)
        sdist = next((root / "sources").glob("*.tar.gz"))
        figures["sources_mb"] = round(sdist.stat().st_size / 1e6, 1)
        started = time.monotonic()
        again = build_llama_tools("aarch64", root, programs=programs)
        figures["cached_ms"] = round((time.monotonic() - started) * 1e3, 1)
        assert again.key == tools.key and not again.built_now
        figures["sizes_mb"] = {name: round(tools.program(name).stat().st_size / 1e6, 1)
                               for name in programs}
        if args.run:
            figures["emulated"] = {}
            for cpu_model in ("cortex-a53", "cortex-a76"):
                out = subprocess.run(
                    ["qemu-aarch64-static", "-cpu", cpu_model, str(tools.program(RUNNER)),
                     "--model", str(args.run), "--threads", "2", "--prompt-tokens", "16",
                     "--new-tokens", "8", "--iterations", "3"],
                    capture_output=True, text=True, check=True, timeout=600).stdout
                timed = [json.loads(line.split(" ", 1)[1]) for line in out.splitlines()
                         if '"generation":"timed"' in line]
                tpot = sorted((g["tokens"][-1] - g["tokens"][0]) / 7e6 for g in timed)
                ttft = sorted((g["tokens"][0] - g["start"]) / 1e6 for g in timed)
                figures["emulated"][cpu_model] = {  # type: ignore[index]
                    "ttft_ms_median": round(ttft[1], 1), "tpot_ms_median": round(tpot[1], 1),
                    "label": "under QEMU user-mode emulation: says nothing about the core"}
    print(json.dumps(figures, indent=1))
    out_dir = Path(__file__).parent / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "device_build.json").write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
