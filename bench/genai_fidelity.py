"""Fidelity of benchlab's ``ortgenai`` cell against ONNX Runtime GenAI's own way of timing it.

The same model file (the builder's llama_15m, fp32 or int4), the same threads. Rounds of fresh
processes in ABBA order (``fidelity.abba``):

* **benchlab**: its ``ortgenai`` cell at P = 128, G = 64 (``benchlab.run``, one runner
  process): TTFT and TPOT, p50 over the process's generations. ``--loop library`` (the
  cell's default) times GenAI's own ``generate_next_token`` loop with benchlab's clock;
  ``--loop benchlab`` runs benchlab's loop (``append_tokens`` per step, ``argmax`` over
  ``get_logits`` in Python).
* **GenAI's loop**, as its end-to-end benchmark script (``benchmark/python/benchmark_e2e.py``
  in the onnxruntime-genai repository) times it, in its own process: greedy search options
  with ``min_length = max_length`` (so no end-of-sequence stops it), the prompt appended and
  timed (its "prompt processing"), then ``generate_next_token`` for each new token, the
  library choosing it. The script is not shipped in the wheel, so this is its timing written
  for the 0.18 API (``append_tokens`` instead of the older ``compute_logits``): time to first
  token = prompt processing + the first choice; time per token = the mean of the later
  ``generate_next_token`` calls (each runs the model on the previous token and chooses), the
  median over generations.

The ratio benchlab / GenAI per round, with its 95% interval (``fidelity.ratio_ci``); goal:
inside 0.97–1.03. ``--smoke`` runs two short rounds.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result  # noqa: E402
from fidelity import abba, ratio_ci  # noqa: E402

NAME = "genai_fidelity"
GOAL = (0.97, 1.03)
PROMPT, NEW = 128, 64


def _model(cache_dir: Path | None, precision: str) -> tuple[str, str]:
    from benchlab.artifacts import ArtifactCache, default_cache_dir
    from benchlab.frameworks.ortgenai.adapter import GENAI_MODELS
    from benchlab.zoo import export_models

    (export,) = export_models(["llama_15m"], ArtifactCache(cache_dir or default_cache_dir()))
    model, config = GENAI_MODELS[precision]
    return str(export.files[model][0]), str(export.files[config][0])


def benchlab_side(precision: str, loop: str, threads: int, generations: int,
                  cache_dir: Path | None) -> dict[str, float]:
    """One fresh runner process of benchlab's ortgenai cell: its TTFT and TPOT p50s."""
    import benchlab
    from benchlab.generation import Generation
    from benchlab.schema import Metric

    with tempfile.TemporaryDirectory() as tmp:
        (result,) = benchlab.run(
            models=["llama_15m"],
            frameworks=[f"ortgenai:precision={precision},threads={threads},loop={loop}"],
            db=Path(tmp) / "r.db", cache_dir=cache_dir,
            overrides=benchlab.TestOverrides(iter=generations, repeat=1, warmup=1,
                                             min_time=0.0),
            generations=[Generation(prompt_tokens=PROMPT, new_tokens=NEW)])
    if result.error:
        raise RuntimeError(result.error)
    return {"benchlab_ttft_ms": result.summaries[Metric.TTFT.key].p50,
            "benchlab_tpot_ms": result.summaries[Metric.TPOT.key].p50}


def genai_loop(model: str, config: str, threads: int, generations: int) -> dict[str, float]:
    """GenAI's own loop, timed as its benchmark script times it (run in a fresh process)."""
    import os

    import numpy as np
    import onnxruntime_genai as og

    with tempfile.TemporaryDirectory() as folder:
        settings = json.loads(Path(config).read_text())
        settings["model"]["decoder"]["filename"] = "model.onnx"
        settings["model"]["decoder"].setdefault("session_options", {})[
            "intra_op_num_threads"] = threads
        os.symlink(os.path.abspath(model), Path(folder, "model.onnx"))
        Path(folder, "genai_config.json").write_text(json.dumps(settings))
        genai = og.Model(folder)
        prompt = np.random.default_rng(0).integers(
            2, settings["model"]["vocab_size"], PROMPT, dtype=np.int32)
        params = og.GeneratorParams(genai)
        params.set_search_options(do_sample=False, max_length=PROMPT + NEW,
                                  min_length=PROMPT + NEW)
        ttfts, tpots = [], []
        for index in range(generations + 1):  # the first is the warm-up
            generator = og.Generator(genai, params)
            start = time.perf_counter()
            generator.append_tokens(prompt)
            generator.generate_next_token()
            first = time.perf_counter()
            steps = []
            for _ in range(NEW - 1):
                before = time.perf_counter()
                generator.generate_next_token()
                steps.append(time.perf_counter() - before)
            del generator
            if index:
                ttfts.append((first - start) * 1e3)
                tpots.append(statistics.mean(steps) * 1e3)
    return {"tool_ttft_ms": statistics.median(ttfts), "tool_tpot_ms": statistics.median(tpots)}


def tool_side(model: str, config: str, threads: int, generations: int) -> dict[str, float]:
    """GenAI's loop in a fresh Python process, as benchlab's side gets one."""
    proc = subprocess.run(
        [sys.executable, __file__, "--genai-loop", json.dumps([model, config, threads,
                                                               generations])],
        capture_output=True, text=True, timeout=600, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    """Measure, print and write ``bench/results/genai_fidelity.json``."""
    if len(sys.argv) == 3 and sys.argv[1] == "--genai-loop":
        print(json.dumps(genai_loop(*json.loads(sys.argv[2]))))
        return 0

    def options(parser: Any) -> None:
        parser.add_argument("--precision", default="fp32", choices=("fp32", "int4"))
        parser.add_argument("--loop", default="library", choices=("library", "benchlab"),
                            help="benchlab's cell: GenAI's own loop (its default) or benchlab's")
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--cache-dir", type=Path, default=None)

    args = parse_args(__doc__.splitlines()[0], repeats=12, repeats_help="ABBA rounds",
                      extra=options)
    rounds = 2 if args.smoke else args.repeats
    generations = 2 if args.smoke else 5
    model, config = _model(args.cache_dir, args.precision)
    per_round = abba(rounds,
                     lambda: benchlab_side(args.precision, args.loop, args.threads,
                                           generations, args.cache_dir),
                     lambda: tool_side(model, config, args.threads, generations))
    decode = ratio_ci([r["benchlab_tpot_ms"] for r in per_round],
                      [r["tool_tpot_ms"] for r in per_round], goal=GOAL)
    first = ratio_ci([r["benchlab_ttft_ms"] for r in per_round],
                     [r["tool_ttft_ms"] for r in per_round], goal=GOAL)
    figures = {"decode_ratio": decode, "ttft_ratio": first, "per_round": per_round,
               "precision": args.precision, "loop": args.loop, "threads": args.threads,
               "goal": list(GOAL)}
    for name, ci in (("decode (TPOT)", decode), ("time to first token", first)):
        print(f"{name:<22} benchlab/GenAI {ci['ratio']:.3f} [{ci['low']:.3f}, "
              f"{ci['high']:.3f}] over {ci['rounds']} rounds: {ci['verdict']}")
    print(f"wrote {write_result(NAME, args, figures)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
