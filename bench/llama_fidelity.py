"""Fidelity of benchlab's llama.cpp cell against llama.cpp's own ``llama-bench``.

The same GGUF file (the zoo's llama_15m, fp32), the same threads, llama.cpp's defaults made
equal (flash attention off, f16 key/value cache). Rounds of fresh processes in ABBA order
(``fidelity.abba``): benchlab's ``llamacpp`` cell at P = 128, G = 64, and on the tool's side
``llama-bench -p 128 -n 64 -d 0,128 -fa 0 -o json`` (read by benchlab's own parser,
``benchlab.frameworks.native.llama_bench``) and ``bench/llama_loop.py``, the fewest Python
steps around the same decode, without and with choosing each token. Compared per round, as
the median of each:

* decode: benchlab's TPOT (tokens after the first, positions 129..191) against
  llama-bench's ``tg64 @ d128`` time per token (positions 128..191, no token chosen);
* prefill: benchlab's prefill rate (P / TTFT, the first token chosen included) against
  llama-bench's ``pp128`` rate;
* where decode's difference goes: the plain loop against llama-bench (Python's call), the
  greedy loop against the plain one (choosing a token: reading the logits, ``argmax``), and
  benchlab against the greedy loop (benchlab's own runner and backend).

Each ratio with its 95% interval (``fidelity.ratio_ci``); goal: inside 0.97–1.03. Needs
``llama-cpp-python`` and a ``llama-bench`` binary (``--llama-bench PATH``; build it from the
llama.cpp that ``llama-cpp-python``'s sdist vendors, with ``cmake`` and ``ninja
llama-bench``). ``--smoke`` runs two rounds with few repetitions.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result  # noqa: E402
from fidelity import abba, ratio_ci  # noqa: E402

NAME = "llama_fidelity"
GOAL = (0.97, 1.03)
PROMPT, NEW = 128, 64


def _gguf(cache_dir: Path | None) -> str:
    from benchlab.spec.artifacts import ArtifactCache, default_cache_dir
    from benchlab.zoo import export_models

    cache = ArtifactCache(cache_dir or default_cache_dir())
    (export,) = export_models(["llama_15m"], cache)
    return str(export.files["gguf"][0])


def benchlab_side(threads: int, generations: int, cache_dir: Path | None) -> dict[str, float]:
    """One fresh runner process of benchlab's llamacpp cell: its TPOT and prefill rate p50s."""
    import benchlab
    from benchlab.schema.generation import Generation
    from benchlab.schema.result import Metric

    with tempfile.TemporaryDirectory() as tmp:
        (result,) = benchlab.run(
            models=["llama_15m"], frameworks=[f"llamacpp:threads={threads}"],
            db=Path(tmp) / "r.db", cache_dir=cache_dir,
            overrides=benchlab.TestOverrides(iter=generations, repeat=1, warmup=1,
                                             min_time=0.0),
            generations=[Generation(prompt_tokens=PROMPT, new_tokens=NEW)])
    if result.error:
        raise RuntimeError(result.error)
    return {"benchlab_tpot_ms": result.summaries[Metric.TPOT.key].p50,
            "benchlab_prefill_tps": result.summaries[Metric.PREFILL_RATE.key].p50}


def tool_side(binary: str, gguf: str, threads: int, repetitions: int) -> dict[str, float]:
    """One ``llama-bench`` process: its tg64@d128 time per token and pp128 rate (medians)."""
    from benchlab.frameworks.native.llama_bench import llama_bench_tests
    from benchlab.schema.result import Metric

    proc = subprocess.run([binary, "-m", gguf, "-p", str(PROMPT), "-n", str(NEW), "-d", "0,128",
                           "-t", str(threads), "-fa", "0", "-r", str(repetitions), "-o", "json"],
                          capture_output=True, text=True, timeout=600, check=True)
    tpot = prefill = None
    for test in llama_bench_tests(proc.stdout):
        depth = int(test.details.get("context_depth", 0))
        values = {s.metric: [] for s in test.samples}
        for sample in test.samples:
            values[sample.metric].append(sample.value)
        if Metric.TPOT in values and depth == PROMPT:
            tpot = statistics.median(values[Metric.TPOT])
        if Metric.PREFILL_RATE in values and depth == 0:
            prefill = statistics.median(values[Metric.PREFILL_RATE])
    if tpot is None or prefill is None:
        raise RuntimeError(f"llama-bench printed no tg64@d128 or pp128: {proc.stdout[:500]}")
    return {"tool_tpot_ms": tpot, "tool_prefill_tps": prefill}


def loop_side(gguf: str, threads: int) -> dict[str, float]:
    """``bench/llama_loop.py`` in a fresh process, plain then greedy: ms per decoded token."""
    script = str(Path(__file__).resolve().parent / "llama_loop.py")
    figures = {}
    for key, extra in (("loop_tpot_ms", []), ("greedy_loop_tpot_ms", ["--greedy"])):
        proc = subprocess.run([sys.executable, script, gguf, "--threads", str(threads), *extra],
                              capture_output=True, text=True, timeout=600, check=True)
        figures[key] = json.loads(proc.stdout.strip().splitlines()[-1])["tpot_ms"]
    return figures


def main() -> int:
    """Measure, print and write ``bench/results/llama_fidelity.json``."""
    def options(parser: Any) -> None:
        parser.add_argument("--llama-bench", required=True, help="path of the llama-bench binary")
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--cache-dir", type=Path, default=None)

    args = parse_args(__doc__.splitlines()[0], repeats=12, repeats_help="ABBA rounds",
                      extra=options)
    rounds = 2 if args.smoke else args.repeats
    gguf = _gguf(args.cache_dir)
    per_round = abba(rounds,
                     lambda: benchlab_side(args.threads, 2 if args.smoke else 5, args.cache_dir),
                     lambda: {**tool_side(args.llama_bench, gguf, args.threads,
                                          2 if args.smoke else 5),
                              **loop_side(gguf, args.threads)})
    # Decode: benchlab's ms per token over the tool's. Prefill: the tool's rate over
    # benchlab's, so that above 1 means benchlab measured it slower in both.
    decode = ratio_ci([r["benchlab_tpot_ms"] for r in per_round],
                      [r["tool_tpot_ms"] for r in per_round], goal=GOAL)
    prefill = ratio_ci([1e3 / r["benchlab_prefill_tps"] for r in per_round],
                       [1e3 / r["tool_prefill_tps"] for r in per_round], goal=GOAL)
    column = {key: [r[key] for r in per_round] for key in
              ("benchlab_tpot_ms", "tool_tpot_ms", "loop_tpot_ms", "greedy_loop_tpot_ms")}
    python_call = ratio_ci(column["loop_tpot_ms"], column["tool_tpot_ms"], goal=GOAL)
    choice = ratio_ci(column["greedy_loop_tpot_ms"], column["loop_tpot_ms"], goal=GOAL)
    own = ratio_ci(column["benchlab_tpot_ms"], column["greedy_loop_tpot_ms"], goal=GOAL)
    figures = {"decode_ratio": decode, "prefill_ratio": prefill,
               "loop_over_llama_bench": python_call, "greedy_over_loop": choice,
               "benchlab_over_greedy_loop": own, "per_round": per_round,
               "threads": args.threads, "goal": list(GOAL)}
    for name, ci in (("decode (TPOT)", decode), ("prefill (time per prompt)", prefill),
                     ("  plain loop / llama-bench", python_call),
                     ("  greedy loop / plain loop", choice),
                     ("  benchlab / greedy loop", own)):
        print(f"{name:<28} {ci['ratio']:.3f} "
              f"[{ci['low']:.3f}, {ci['high']:.3f}] over {ci['rounds']} rounds: {ci['verdict']}")
    print(f"wrote {write_result(NAME, args, figures)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
