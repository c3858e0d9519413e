"""The fewest Python steps around llama.cpp's decode: the ``llama_fidelity`` bench's middle arm.

``python bench/llama_loop.py GGUF [--threads 2] [--greedy]`` loads the file through
``llama-cpp-python``'s bindings as benchlab's backend does (the same library, threads, batch
of 512, f16 cache, flash attention off, ggml's persistent threadpool attached), decodes a
128-token prompt and then 64 tokens one ``llama_decode`` at a time, five times, and prints
the median ms per decoded token as JSON. Each step only sets the batch's five fields and
calls ``llama_decode``, as ``llama-bench``'s ``tg`` does in C++; with ``--greedy`` it also
chooses the next token, the ``argmax`` of the logits llama.cpp returns, as every generator
(and benchlab) does. Its figure against ``llama-bench``'s measures what Python's call costs;
``--greedy`` against the plain loop what choosing a token costs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

PROMPT, NEW, GENERATIONS = 128, 64, 6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--greedy", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import llama_cpp
    import numpy as np

    from benchlab.frameworks.llamacpp.generative import LlamaCppDecoder

    class Config:  # the backend's own loading and context, none of its per-step code
        options = {"threads": args.threads, "n_ctx": 256}
        threads = args.threads

        @staticmethod
        def model_file(_: str) -> str:
            return args.gguf

    backend = LlamaCppDecoder(Config())
    backend.load()
    ctx, vocab = backend.context, backend.vocab_size()
    batch = llama_cpp.llama_batch_init(512, 0, 1)
    for i in range(512):
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = 0

    def decode(tokens: list[int], start: int) -> None:
        for i, token in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.logits[i] = token, start + i, 0
        batch.logits[len(tokens) - 1] = 1
        batch.n_tokens = len(tokens)
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")

    per_token = []
    for _ in range(GENERATIONS):
        backend.reset()
        decode(list(range(1, PROMPT + 1)), 0)
        token, started = 5, time.perf_counter_ns()
        for step in range(NEW):
            decode([token], PROMPT + step)
            if args.greedy:
                token = int(np.argmax(np.ctypeslib.as_array(
                    llama_cpp.llama_get_logits_ith(ctx, -1), shape=(vocab,))))
        per_token.append((time.perf_counter_ns() - started) / NEW / 1e6)
    llama_cpp.llama_batch_free(batch)
    backend.close()
    # The first generation warms the caches and the pool; the median of the rest.
    print(json.dumps({"tpot_ms": statistics.median(per_token[1:])}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
