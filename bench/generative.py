"""Generative figures: decode tokens/s and TTFT per runtime and size, and benchlab's cost per token.

Two parts, both on the zoo's Llama decoders (docs/performance.md, "Generative models"):

* **figures**: ``benchlab.run`` of llama_15m and llama_100m on every generative runtime
  installed here at P = 128, G = 64, D = 0: TTFT, TPOT, decode and prefill tokens/s, peak
  memory and token agreement, each the p50 over the job's generations.
* **overhead**: what benchlab's generation loop adds to each token beyond the runtime's own
  call. The ONNX Runtime decoder of llama_15m is run in this process through
  :func:`benchlab.runner.generate.time_generation`, its ``forward`` wrapped to time itself;
  per token, the inter-token latency minus the runtime call's own time is the loop's cost
  (the greedy ``argmax`` over the vocabulary, the clock reads, feeding the token back, and the
  wrapper's two clock reads, so it is an upper bound). Goal: under 1% of TPOT.

``--smoke`` runs a tiny version (llama_15m, ONNX Runtime, a few tokens) so CI keeps it working.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, spread, write_result  # noqa: E402

NAME = "generative"
GOAL_SHARE = 0.01
RUNTIMES = ("pytorch", "onnxruntime", "openvino", "llamacpp", "executorch", "ortgenai", "ovgenai")


class _Timed:
    """A generative backend whose one-token calls time themselves."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls_ns: list[int] = []

    def reset(self) -> None:
        self.inner.reset()

    def vocab_size(self) -> int:
        return self.inner.vocab_size()

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        if len(tokens) != 1:
            return self.inner.forward(tokens, all_logits)
        start = time.perf_counter_ns()
        logits = self.inner.forward(tokens, all_logits)
        self.calls_ns.append(time.perf_counter_ns() - start)
        return logits


def _decoder_file(cache_dir: Path) -> str:
    from benchlab.spec.artifacts import ArtifactCache
    from benchlab.zoo import export_models

    (export,) = export_models(["llama_15m"], ArtifactCache(cache_dir))
    path, _ = export.files["decoder_onnx"]
    return str(path)


def overhead(model_file: str, generations: int, new_tokens: int) -> dict[str, Any]:
    """The loop's cost per token beside the runtime call's time, over ``generations``."""
    from benchlab.frameworks.onnxruntime.generative import OnnxRuntimeDecoder
    from benchlab.runner.config import RunnerConfig
    from benchlab.runner.generate import time_generation

    decoder = OnnxRuntimeDecoder(RunnerConfig(backend="bench", model_path=model_file))
    decoder.load()
    timed = _Timed(decoder)
    prompt = np.random.default_rng(0).integers(2, timed.vocab_size(), 128, dtype=np.int64)
    time_generation(timed, prompt, new_tokens)  # warm-up
    shares, per_token_us, tpots = [], [], []
    for _ in range(generations):
        timed.calls_ns.clear()
        times, _ = time_generation(timed, prompt, new_tokens)
        gaps = np.diff(np.array(times.tokens))
        calls = np.array(timed.calls_ns)
        loop_ns = float(np.mean(gaps - calls))
        tpot_ns = float(np.mean(gaps))
        per_token_us.append(loop_ns / 1e3)
        tpots.append(tpot_ns / 1e6)
        shares.append(loop_ns / tpot_ns)
    # The loop's biggest part is the greedy choice: an argmax over the vocabulary's logits,
    # which the runtime's worker thread has just written on the other core. Timed apart,
    # right after each call and again on the same (now warm) logits.
    after_call, warm = [], []
    clock = time.perf_counter_ns
    for _ in range(generations):
        decoder.reset()
        token = int(np.argmax(decoder.forward(prompt)))
        step = np.empty(1, dtype=np.int64)
        for _ in range(new_tokens - 1):
            step[0] = token
            logits = decoder.forward(step)
            t0 = clock()
            token = int(np.argmax(logits))
            t1 = clock()
            int(np.argmax(logits))
            t2 = clock()
            after_call.append((t1 - t0) / 1e3)
            warm.append((t2 - t1) / 1e3)
    argmax_us = statistics.mean(after_call)
    bookkeeping = [max(loop - argmax_us, 0.0) for loop in per_token_us]
    return {"loop_us_per_token": spread(per_token_us), "tpot_ms": spread(tpots),
            "share_of_tpot": spread(shares), "goal_share": GOAL_SHARE,
            "goal_met": statistics.median(shares) < GOAL_SHARE,
            "argmax_after_call_us": argmax_us, "argmax_warm_us": statistics.mean(warm),
            "bookkeeping_us_per_token": spread(bookkeeping),
            "bookkeeping_share_of_tpot": spread([b / (t * 1e3)
                                                 for b, t in zip(bookkeeping, tpots)])}


def figures(models: list[str], frameworks: list[str], prompt: int, new: int, repeat: int,
            iters: int, cache_dir: Path) -> list[dict[str, Any]]:
    """One row per (model, runtime): the p50s of a ``benchlab.run``."""
    import benchlab
    from benchlab.schema.generation import Generation
    from benchlab.plugins import available_names
    from benchlab.report.generation import generation_rows
    from benchlab.schema.result import Metric

    installed = set(available_names("benchlab.frameworks"))
    wanted = [f for f in frameworks if f.split(":")[0] in installed]
    with tempfile.TemporaryDirectory() as tmp:
        results = benchlab.run(
            models=models, frameworks=wanted, db=Path(tmp) / "results.db", cache_dir=cache_dir,
            overrides=benchlab.TestOverrides(iter=iters, repeat=repeat, warmup=1, min_time=0.0),
            generations=[Generation(prompt_tokens=prompt, new_tokens=new)])
    rows = []
    for row, result in zip(generation_rows(list(results)), results, strict=True):
        sqnr = result.summaries.get(Metric.SQNR.key)
        rows.append({"model": row.model, "framework": row.framework,
                     "precision": row.precision, "status": row.status,
                     "ttft_ms": row.ttft, "tpot_ms": row.tpot, "tpot_ci": row.tpot_ci,
                     "decode_tokens_per_s": row.decode_rate,
                     "prefill_tokens_per_s": row.prefill_rate, "memory_peak_mib": row.memory_peak,
                     "size_mib": row.size, "bits_per_weight": result.details.get(
                         "bits_per_weight"),
                     "token_agreement": row.token_agreement,
                     "first_divergence": row.first_divergence,
                     "logit_sqnr_db": None if sqnr is None else sqnr.p50,
                     "error": result.error})
    return rows


def _print_overhead(cost: dict[str, Any]) -> None:
    print("benchlab's generation loop, llama_15m on ONNX Runtime (per token)")
    for key in ("loop_us_per_token", "tpot_ms", "share_of_tpot", "bookkeeping_us_per_token",
                "bookkeeping_share_of_tpot"):
        s = cost[key]
        print(f"  {key:<26} min {s['min']:.4g}  median {s['median']:.4g}  max {s['max']:.4g}")
    print(f"  argmax over the logits: {cost['argmax_after_call_us']:.1f} us right after the "
          f"call, {cost['argmax_warm_us']:.1f} us on the same logits again")
    print(f"  goal: under {GOAL_SHARE:.0%} of TPOT: {'met' if cost['goal_met'] else 'MISSED'}")


def main() -> int:
    """Measure, print the tables and write ``bench/results/generative.json``."""
    def options(parser: Any) -> None:
        parser.add_argument("--cache-dir", type=Path, default=None,
                            help="artifact cache (default: benchlab's; --smoke: a new one)")
        parser.add_argument("--frameworks", default=",".join(RUNTIMES),
                            help="the runtimes, comma-separated (each with its precisions)")
        parser.add_argument("--models", default="llama_15m,llama_100m")
        parser.add_argument("--skip-overhead", action="store_true",
                            help="measure the figures only, not benchlab's cost per token")

    args = parse_args(__doc__.splitlines()[0], repeats=3,
                      repeats_help="fresh processes per cell (the overhead part: x10 "
                      "generations)", extra=options)
    with tempfile.TemporaryDirectory() as tmp:
        from benchlab.spec.artifacts import default_cache_dir

        cache_dir = args.cache_dir or (Path(tmp) / "cache" if args.smoke
                                       else default_cache_dir())
        cost = None if args.skip_overhead else overhead(
            _decoder_file(cache_dir), generations=2 if args.smoke else 10 * args.repeats,
            new_tokens=8 if args.smoke else 64)
        rows = figures(["llama_15m"] if args.smoke else args.models.split(","),
                       ["onnxruntime:precision=fp32"] if args.smoke
                       else args.frameworks.split(","),
                       prompt=16 if args.smoke else 128, new=4 if args.smoke else 64,
                       repeat=args.repeats, iters=1 if args.smoke else 5, cache_dir=cache_dir)
    if cost is not None:
        _print_overhead(cost)
    print(f"{'model':<11} {'runtime':<12} {'prec':<6} {'TTFT ms':>8} {'TPOT ms':>8} "
          f"{'decode/s':>9} {'prefill/s':>9} {'MiB':>6} {'size':>6} {'bpw':>5} {'agree':>6} "
          f"{'SQNR':>5}")
    for row in rows:
        def show(key: str, spec: str) -> str:
            value = row[key]
            return "-" if value is None else format(value, spec)
        print(f"{row['model']:<11} {row['framework']:<12} {row['precision']:<6} "
              f"{show('ttft_ms', '8.2f')} "
              f"{show('tpot_ms', '8.3f')} {show('decode_tokens_per_s', '9.1f')} "
              f"{show('prefill_tokens_per_s', '9.0f')} {show('memory_peak_mib', '6.0f')} "
              f"{show('size_mib', '6.1f')} {show('bits_per_weight', '5.2f')} "
              f"{show('token_agreement', '6.0%')} {show('logit_sqnr_db', '5.1f')}"
              + (f"  {row['error']}" if row["error"] else ""))
    print(f"wrote {write_result(NAME, args, {'overhead': cost, 'cells': rows})}")
    return 0 if all(r["status"] == "ok" for r in rows) and rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
