"""Fidelity of benchlab's cells on the two GenAI libraries against each library's own way of
timing itself.

``--library ortgenai`` (ONNX Runtime GenAI) or ``ovgenai`` (OpenVINO GenAI); the same model
files, the same threads. Rounds of fresh processes in ABBA order (``fidelity.abba``):

* **benchlab**: its cell at P = 128, G = 64 (``benchlab.run``, one runner process): TTFT and
  TPOT, p50 over the process's generations. ``--loop library`` (the cells' default) times the
  library's own loop with benchlab's clock; ``--loop benchlab`` runs benchlab's loop (a
  forward per step, ``argmax`` over the logits in Python).
* **the library's own timing**, in its own process:

  - ONNX Runtime GenAI, as its end-to-end benchmark script
    (``benchmark/python/benchmark_e2e.py`` in the onnxruntime-genai repository) times it:
    greedy search options with ``min_length = max_length`` (so no end-of-sequence stops
    it), the prompt appended and timed (its "prompt processing"), then
    ``generate_next_token`` for each new token, the library choosing it. The script is not
    shipped in the wheel, so this is its timing written for the 0.18 API (``append_tokens``
    instead of the older ``compute_logits``): time to first token = prompt processing + the
    first choice; time per token = the mean of the later ``generate_next_token`` calls, the
    median over generations.
  - OpenVINO GenAI, as its benchmark sample (``samples/python/text_generation/
    benchmark_genai.py``) reads it: ``LLMPipeline.generate`` with no streamer, greedy,
    exactly G new tokens, and the pipeline's own ``perf_metrics`` (``get_ttft``,
    ``get_tpot``), the median over generations. Beside it, ``streamer_delay``: how late the
    pipeline's streamer is handed each token after the pipeline records producing it (why
    benchlab's cell takes the pipeline's records, not the streamer's).

The ratio benchlab / library per round, with its 95% interval (``fidelity.ratio_ci``); goal:
inside 0.97–1.03. ``--smoke`` runs two rounds of one generation each (and one for the
streamer's delay).
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

GOAL = (0.97, 1.03)
PROMPT, NEW = 128, 64
#: Library → its precisions (the first is the default).
PRECISIONS = {"ortgenai": ("fp32", "int4"), "ovgenai": ("fp32", "int8", "int4")}


def _model(cache_dir: Path | None, library: str, precision: str) -> list[str]:
    """The model's files for ``library`` at ``precision`` (model first)."""
    from benchlab.spec.artifacts import ArtifactCache, default_cache_dir
    from benchlab.frameworks.common import GENAI_FILES, OVGENAI_FILES
    from benchlab.zoo import export_models

    (export,) = export_models(["llama_15m"], ArtifactCache(cache_dir or default_cache_dir()))
    keys = (GENAI_FILES if library == "ortgenai" else OVGENAI_FILES)[precision]
    return [str(export.files[key][0]) for key in keys]


def benchlab_side(library: str, precision: str, loop: str, threads: int, generations: int,
                  cache_dir: Path | None) -> dict[str, float]:
    """One fresh runner process of benchlab's cell: its TTFT and TPOT p50s."""
    import benchlab
    from benchlab.schema.generation import Generation
    from benchlab.schema.result import Metric

    with tempfile.TemporaryDirectory() as tmp:
        (result,) = benchlab.run(
            models=["llama_15m"],
            frameworks=[f"{library}:precision={precision},threads={threads},loop={loop}"],
            db=Path(tmp) / "r.db", cache_dir=cache_dir,
            overrides=benchlab.TestOverrides(iter=generations, repeat=1, warmup=1,
                                             min_time=0.0),
            generations=[Generation(prompt_tokens=PROMPT, new_tokens=NEW)])
    if result.error:
        raise RuntimeError(result.error)
    return {"benchlab_ttft_ms": result.summaries[Metric.TTFT.key].p50,
            "benchlab_tpot_ms": result.summaries[Metric.TPOT.key].p50}


def ortgenai_loop(files: list[str], precision: str, threads: int,
                  generations: int) -> dict[str, float]:
    """ONNX Runtime GenAI's own loop, timed as its benchmark script times it (the files say
    the precision)."""
    import os

    import numpy as np
    import onnxruntime_genai as og

    model, config = files
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


def ovgenai_loop(files: list[str], precision: str, threads: int,
                 generations: int) -> dict[str, float]:
    """OpenVINO GenAI's ``LLMPipeline.generate``, read from its own ``perf_metrics`` as its
    benchmark sample reads them; the pipeline compiled as benchlab's cell compiles it."""
    import numpy as np
    import openvino as ov
    import openvino_genai as ovg

    from benchlab.frameworks.ovgenai.generative import (
        greedy_generation,
        link_model,
        pipeline_properties,
    )

    xml, weights = files
    with tempfile.TemporaryDirectory() as folder:
        link_model(Path(folder), xml, weights)
        pipeline = ovg.LLMPipeline(folder, "CPU", **pipeline_properties(precision, threads))
        config = greedy_generation(pipeline)
        config.max_new_tokens = config.min_new_tokens = NEW
        ids = np.random.default_rng(0).integers(2, 8192, PROMPT, dtype=np.int64)[None, :]
        inputs = ovg.TokenizedInputs(ov.Tensor(ids), ov.Tensor(np.ones_like(ids)))
        ttfts, tpots = [], []
        for index in range(generations + 1):  # the first is the warm-up
            metrics = pipeline.generate(inputs, config).perf_metrics
            if index:
                ttfts.append(metrics.get_ttft().mean)
                tpots.append(metrics.get_tpot().mean)
        del pipeline
    return {"tool_ttft_ms": statistics.median(ttfts), "tool_tpot_ms": statistics.median(tpots)}


def streamer_delay(files: list[str], precision: str, threads: int,
                   generations: int) -> dict[str, float]:
    """How late OpenVINO GenAI's streamer is handed each token after the pipeline records
    producing it (its streamer runs on a thread of its own): benchlab's backend, which keeps
    both, over ``generations`` generations after a warm-up; medians in ms."""
    import numpy as np

    from benchlab.frameworks.ovgenai.generative import OvGenAiDecoder
    from benchlab.runner.config import RunnerConfig
    from benchlab.runner.generate import time_generation

    xml, weights = files
    decoder = OvGenAiDecoder(RunnerConfig(
        backend="", model_path=xml, threads=threads, extra_files={"weights": weights},
        generate={"prompt_tokens": PROMPT, "new_tokens": NEW}, options={"precision": precision}))
    decoder.load()
    prompt = np.random.default_rng(0).integers(2, decoder.vocab_size(), PROMPT)
    first, later, ttft = [], [], []
    for index in range(generations + 1):
        times, _ = time_generation(decoder, prompt, NEW)
        late = np.subtract(decoder.last_streamer_times, times.tokens) / 1e6
        if index:
            first.append(late[0])
            later.append(float(np.median(late[1:])))
            ttft.append((times.tokens[0] - times.start) / 1e6)
    decoder.close()
    return {"first_token_late_ms": statistics.median(first),
            "later_tokens_late_ms": statistics.median(later),
            "ttft_ms": statistics.median(ttft)}


TOOL_LOOPS = {"ortgenai": ortgenai_loop, "ovgenai": ovgenai_loop,
              "ovgenai-streamer": streamer_delay}


def tool_side(library: str, files: list[str], precision: str, threads: int,
              generations: int) -> dict[str, float]:
    """The library's own timing in a fresh Python process, as benchlab's side gets one."""
    proc = subprocess.run(
        [sys.executable, __file__, "--tool-loop", json.dumps([library, files, precision,
                                                              threads, generations])],
        capture_output=True, text=True, timeout=600, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    """Measure, print and write ``bench/results/genai_fidelity[_ovgenai].json``."""
    if len(sys.argv) == 3 and sys.argv[1] == "--tool-loop":
        library, *rest = json.loads(sys.argv[2])
        print(json.dumps(TOOL_LOOPS[library](*rest)))
        return 0

    def options(parser: Any) -> None:
        parser.add_argument("--library", default="ortgenai", choices=tuple(PRECISIONS))
        parser.add_argument("--precision", default="fp32",
                            choices=sorted({p for ps in PRECISIONS.values() for p in ps}))
        parser.add_argument("--loop", default="library", choices=("library", "benchlab"),
                            help="benchlab's cell: the library's own loop (its default) or "
                                 "benchlab's")
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--cache-dir", type=Path, default=None)

    args = parse_args(__doc__.splitlines()[0], repeats=12, repeats_help="ABBA rounds",
                      extra=options)
    if args.precision not in PRECISIONS[args.library]:
        raise SystemExit(f"{args.library} has no precision {args.precision}")
    rounds = 2 if args.smoke else args.repeats
    generations = 1 if args.smoke else 5
    files = _model(args.cache_dir, args.library, args.precision)
    per_round = abba(rounds,
                     lambda: benchlab_side(args.library, args.precision, args.loop,
                                           args.threads, generations, args.cache_dir),
                     lambda: tool_side(args.library, files, args.precision, args.threads,
                                       generations))
    decode = ratio_ci([r["benchlab_tpot_ms"] for r in per_round],
                      [r["tool_tpot_ms"] for r in per_round], goal=GOAL)
    first = ratio_ci([r["benchlab_ttft_ms"] for r in per_round],
                     [r["tool_ttft_ms"] for r in per_round], goal=GOAL)
    figures = {"decode_ratio": decode, "ttft_ratio": first, "per_round": per_round,
               "library": args.library, "precision": args.precision, "loop": args.loop,
               "threads": args.threads, "goal": list(GOAL)}
    if args.library == "ovgenai":
        figures["streamer_delay"] = tool_side("ovgenai-streamer", files, args.precision,
                                              args.threads, 1 if args.smoke else 20)
        print("streamer handed tokens late by (median ms): first {first_token_late_ms:.3f}, "
              "later {later_tokens_late_ms:.3f}, TTFT {ttft_ms:.3f}".format(
                  **figures["streamer_delay"]))
    for name, ci in (("decode (TPOT)", decode), ("time to first token", first)):
        print(f"{name:<22} benchlab/{args.library} {ci['ratio']:.3f} [{ci['low']:.3f}, "
              f"{ci['high']:.3f}] over {ci['rounds']} rounds: {ci['verdict']}")
    name = "genai_fidelity" if args.library == "ortgenai" else f"genai_fidelity_{args.library}"
    print(f"wrote {write_result(name, args, figures)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
