"""An LLM server under load: the highest Poisson rate at which a text generator meets TTFT and
TPOT bounds, per runtime (docs/performance.md, "Generative models").

``benchlab.run`` of llama_15m under the server scenario with token bounds (MLPerf LoadGen,
``use_token_latencies``; docs/scenarios.md) at P = 64, G = 32, one process per cell: the QPS
search's answer, LoadGen's TTFT and TPOT p99 at that rate, goodput and tokens/s, and every
rate the search tried. The bounds are this script's choice for a 15M model on two cores
(``--ttft-bound``, ``--tpot-bound``); MLPerf's own are per model and much looser for 8B+.

``--rates R...`` runs each cell at those fixed rates instead of searching (one LoadGen run
each): the TTFT and TPOT percentiles against offered load, side by side. ``--smoke`` runs one
cell at a fixed rate with few queries, so CI keeps the script working.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result  # noqa: E402

NAME = "llm_server"
CELLS = ("llamacpp:precision=q8_0,threads=1", "ortgenai:precision=int4")


def cell(framework: str, scenario: Any, prompt: int, new: int,
         cache_dir: Path | None) -> dict[str, Any]:
    """One server cell: the search's answer and each rate it tried."""
    import benchlab
    from benchlab.schema.generation import Generation
    from benchlab.schema.result import DetailKey, Metric

    with tempfile.TemporaryDirectory() as tmp:
        (result,) = benchlab.run(
            models=["llama_15m"], frameworks=[framework], db=Path(tmp) / "r.db",
            cache_dir=cache_dir, scenario=scenario,
            # A search runs LoadGen up to twelve times, 700 queries each: longer than the
            # default job timeout at the low rates.
            overrides=benchlab.TestOverrides(repeat=1, warmup=2, timeout=3000),
            generations=[Generation(prompt_tokens=prompt, new_tokens=new)])
    facts = result.details.get(DetailKey.SCENARIO) or {}

    def p50(metric: Metric) -> float | None:
        summary = result.summaries.get(metric.key)
        return None if summary is None else summary.p50

    return {"framework": framework, "status": str(result.status), "error": result.error,
            "target_qps": scenario.target_qps,
            "valid": facts.get("valid"), "why_invalid": facts.get("why_invalid"),
            "qps": p50(Metric.SERVER_QPS), "ttft_p99_ms": p50(Metric.SCENARIO_TTFT),
            "tpot_p99_ms": p50(Metric.SCENARIO_TPOT), "goodput": p50(Metric.GOODPUT),
            "tokens_per_s": p50(Metric.TOKEN_THROUGHPUT),
            "ttft_p50_ms": p50(Metric.TTFT), "tpot_p50_ms": p50(Metric.TPOT),
            "queries_run": facts.get("queries_run"),
            "ttft_count": (result.summaries[Metric.TTFT.key].count
                           if Metric.TTFT.key in result.summaries else None),
            "runs": facts.get("runs", [])}


def main() -> int:
    """Measure, print and write ``bench/results/llm_server.json``."""
    def options(parser: Any) -> None:
        parser.add_argument("--ttft-bound", type=float, default=100.0, help="ms, p99")
        parser.add_argument("--tpot-bound", type=float, default=5.0, help="ms, p99")
        parser.add_argument("--cells", nargs="+", default=list(CELLS),
                            help="frameworks with their options (llamacpp:threads=1,...)")
        parser.add_argument("--rates", type=float, nargs="+", default=None,
                            help="fixed arrival rates (queries/s) instead of the search")
        parser.add_argument("--cache-dir", type=Path, default=None)

    args = parse_args(__doc__.splitlines()[0], repeats=None, extra=options)
    from benchlab.schema.scenario import Scenario

    if args.smoke:
        scenario = Scenario("server", duration_s=0.5, query_count=50, target_qps=20,
                            ttft_bound_ms=args.ttft_bound, tpot_bound_ms=args.tpot_bound)
        frameworks, prompt, new = ["onnxruntime:precision=int8"], 16, 4
    else:
        scenario = Scenario("server", duration_s=1.0, query_count=700,
                            ttft_bound_ms=args.ttft_bound, tpot_bound_ms=args.tpot_bound)
        frameworks, prompt, new = args.cells, 64, 32
    if args.rates and not args.smoke:
        from dataclasses import replace

        cells = [cell(f, replace(scenario, target_qps=rate), prompt, new, args.cache_dir)
                 for f in frameworks for rate in args.rates]
    else:
        cells = [cell(f, scenario, prompt, new, args.cache_dir) for f in frameworks]
    print(f"llama_15m, P={prompt} G={new}, server at TTFT p99 <= {args.ttft_bound:g} ms and "
          f"TPOT p99 <= {args.tpot_bound:g} ms")
    print(f"{'runtime':<30} {'offered':>7} {'QPS':>7} {'TTFT p99':>9} {'TPOT p99':>9} "
          f"{'goodput':>8} {'tokens/s':>9} {'runs':>5}")

    def show(value: Any, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    for row in cells:
        print(f"{row['framework']:<30} {show(row['target_qps'], '7.2f')} "
              f"{show(row['qps'], '7.2f')} "
              f"{show(row['ttft_p99_ms'], '9.2f')} {show(row['tpot_p99_ms'], '9.3f')} "
              f"{show(row['goodput'], '8.2f')} {show(row['tokens_per_s'], '9.0f')} "
              f"{len(row['runs']):>5}" + ("" if row["valid"] else f"  {row['why_invalid']}"))
    figures = {"cells": cells, "ttft_bound_ms": args.ttft_bound,
               "tpot_bound_ms": args.tpot_bound, "prompt_tokens": prompt, "new_tokens": new}
    print(f"wrote {write_result(NAME, args, figures)}")
    return 0 if all(row["status"] == "ok" for row in cells) else 1


if __name__ == "__main__":
    raise SystemExit(main())
