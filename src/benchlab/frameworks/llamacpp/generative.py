"""Runner-side generative llama.cpp backend: a GGUF file in ``llama_cpp.Llama``
(``llama-cpp-python``), its key/value cache held in place by llama.cpp.

``Llama`` loads the model and creates the context (threads, context size, batch, flash
attention, cache type); the generation itself goes through llama.cpp's own C API, as
``llama-cli`` does, with one ``llama_batch`` of this backend's:

* **Logits.** Each token of a batch carries llama.cpp's output flag. A prefill flags its last
  position only, so llama.cpp computes the output layer (8192 × 384 here) for that position
  alone and copies out one row; every position is flagged only when ``all_logits`` asks for
  them (the accuracy check). One context serves both: a second context with every position's
  logits would hold a second cache and pay for the output layer on every prompt token.
  (``Llama.eval`` would not do: since 0.3 it keeps logits only under ``logits_all``, which
  flags every position of every batch.)
* **Reset.** ``llama_memory_clear(llama_get_memory(ctx), data=True)`` empties the cache, its
  buffers included, and positions start again at 0. (``Llama.reset`` only rewinds its own
  token counter for a transformer and leaves the cached cells for the next ``eval`` to drop.)
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import llama_cpp
import numpy as np

from benchlab.frameworks.llamacpp.threadpool import DEFAULT_POLL, Threadpool
from benchlab.runner.config import RunnerConfig
from benchlab.runner.generate import positions_needed
from benchlab.schema import DetailKey

__all__ = ["LlamaCppDecoder", "context_needed"]

#: The most positions a context gets (the zoo's decoders are trained for 2048).
MAX_CONTEXT = 2048
#: llama.cpp pads its cache to multiples of 256 cells.
_CONTEXT_STEP = 256
_CACHE_TYPES = {"f32": llama_cpp.GGML_TYPE_F32, "f16": llama_cpp.GGML_TYPE_F16,
                "q8_0": llama_cpp.GGML_TYPE_Q8_0}
#: GGUF ``general.file_type`` (llama.cpp's ``llama_ftype``) → benchlab's precision name.
_FILE_TYPES = {0: "fp32", 1: "fp16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 8: "q5_0", 9: "q5_1",
               10: "q2_k", 12: "q3_k_m", 15: "q4_k_m", 17: "q5_k_m", 18: "q6_k", 32: "bf16"}


def context_needed(config: RunnerConfig) -> int:
    """Positions the test needs (:func:`~benchlab.runner.generate.positions_needed`), rounded
    up to llama.cpp's step; at most :data:`MAX_CONTEXT`."""
    need = positions_needed(config)
    if need > MAX_CONTEXT:
        raise ValueError(f"the test needs {need} positions; llamacpp holds at most "
                         f"{MAX_CONTEXT}")
    return min(MAX_CONTEXT, -(-need // _CONTEXT_STEP) * _CONTEXT_STEP)


def _cpus() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _flag(value: Any) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


class LlamaCppDecoder:
    """:class:`benchlab.runner.generate.GenerativeBackend` on llama.cpp. Options: ``threads``
    (or the test's; all CPUs this process may use otherwise; prefill and decode alike),
    ``n_batch`` (512), ``flash_attn`` (false), ``cache_type`` (``f16``, llama.cpp's
    default; ``f32``, ``q8_0``), ``n_ctx`` (default :func:`context_needed`), ``poll`` (the
    attached threadpool's polling level, 0-100, 50 as llama.cpp's tools; ``none``: no pool
    attached, ggml's pool per call as ``llama-cpp-python`` leaves it)."""

    def __init__(self, config: RunnerConfig) -> None:
        options = config.options
        self.config = config
        self.model_path = config.model_file("the llamacpp backend needs a GGUF file")
        self._threads = int(options.get("threads") or config.threads or _cpus())
        self._n_ctx = int(options.get("n_ctx") or context_needed(config))
        self._n_batch = min(int(options.get("n_batch", 512)), self._n_ctx)
        self._flash = _flag(options.get("flash_attn", False))
        self._cache_type = str(options.get("cache_type", "f16"))
        if self._cache_type not in _CACHE_TYPES:
            raise ValueError(f"cache_type must be one of {sorted(_CACHE_TYPES)}")
        poll = str(options.get("poll", DEFAULT_POLL)).lower()
        self._poll = None if poll == "none" else int(poll)
        self._pool: Threadpool | None = None
        self._llm: Any = None
        self._ctx: Any = None
        self._batch: Any = None
        self._vocab = 0
        self._position = 0

    def load(self) -> None:
        """Load the GGUF file, create the context and this backend's batch."""
        cache = _CACHE_TYPES[self._cache_type]
        self._llm = llama_cpp.Llama(
            self.model_path, n_ctx=self._n_ctx, n_batch=self._n_batch, n_ubatch=self._n_batch,
            n_threads=self._threads, n_threads_batch=self._threads, flash_attn=self._flash,
            type_k=cache, type_v=cache, verbose=False)
        trained = llama_cpp.llama_model_n_ctx_train(self._llm.model)
        if self._n_ctx > trained:
            raise ValueError(f"n_ctx {self._n_ctx} is more than the model's {trained} positions")
        self._ctx = self._llm.ctx
        if self._poll is not None:
            self._pool = Threadpool(self._ctx, self._threads, self._poll)
        self._vocab = int(self._llm.n_vocab())
        size = self._n_batch
        self._batch = llama_cpp.llama_batch_init(size, 0, 1)
        batch = self._batch
        self._tokens = np.ctypeslib.as_array(batch.token, shape=(size,))
        self._positions = np.ctypeslib.as_array(batch.pos, shape=(size,))
        self._outputs = np.ctypeslib.as_array(batch.logits, shape=(size,))
        np.ctypeslib.as_array(batch.n_seq_id, shape=(size,))[:] = 1
        for i in range(size):  # every token in sequence 0
            batch.seq_id[i][0] = 0
        self.reset()

    def vocab_size(self) -> int:
        """The logits' width (the GGUF file's vocabulary)."""
        return self._vocab

    def reset(self) -> None:
        """Empty llama.cpp's cache (metadata and buffers): the next call starts at 0."""
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(self._ctx), True)
        self._position = 0

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        """Decode ``tokens`` after the cached positions, ``n_batch`` at a time; the last
        position's logits (only that position flagged for output), or every position's."""
        ids = np.asarray(tokens, dtype=np.int64)
        count = len(ids)
        if self._position + count > self._n_ctx:
            raise ValueError(f"{self._position} cached + {count} new positions exceed the "
                             f"context of {self._n_ctx} (option n_ctx)")
        every = np.empty((count, self._vocab), dtype=np.float32) if all_logits else None
        for start in range(0, count, self._n_batch):
            size = min(self._n_batch, count - start)
            self._tokens[:size] = ids[start:start + size]
            self._positions[:size] = np.arange(self._position, self._position + size)
            self._outputs[:size] = 1 if all_logits else 0
            if start + size == count:
                self._outputs[size - 1] = 1
            self._batch.n_tokens = size
            status = llama_cpp.llama_decode(self._ctx, self._batch)
            if status != 0:
                raise RuntimeError(f"llama_decode failed (status {status}) at position "
                                   f"{self._position}")
            self._position += size
            if every is not None:
                every[start:start + size] = np.ctypeslib.as_array(
                    llama_cpp.llama_get_logits(self._ctx), shape=(size, self._vocab))
        if every is not None:
            return every
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self._ctx, -1),
                                     shape=(self._vocab,)).copy()

    def precision(self) -> str:
        """The GGUF file's type (``general.file_type``), as benchlab names precisions."""
        raw = self._llm.metadata.get("general.file_type")
        if raw is None:
            return "unknown"
        return _FILE_TYPES.get(int(raw), f"llama_ftype {raw}")

    def info(self) -> dict[str, Any]:
        """The runtime's version and the context's effective settings."""
        cparams = self._llm.context_params
        return {
            DetailKey.RUNTIME_VERSION: llama_cpp.__version__,
            DetailKey.PRECISION: self.precision(),
            DetailKey.THREADS: int(cparams.n_threads),
            "threads_batch": int(cparams.n_threads_batch),
            "n_ctx": int(llama_cpp.llama_n_ctx(self._ctx)),
            "n_batch": int(cparams.n_batch),
            "flash_attn": self._flash,
            "kv_cache": f"llama.cpp in place, {self._cache_type}",
            "threadpool": (f"attached, {self._pool.threads} threads, poll {self._pool.poll}"
                           if self._pool else "none attached: ggml's own per llama_decode"),
            "logits": "output flag on the last position only unless all positions are asked",
            "model_desc": _model_desc(self._llm.model),
            # What the file really holds: a k-quant falls back to another type on rows that
            # are not a multiple of 256 long (llama_15m's Q4_K_M is mostly Q5_0).
            "bits_per_weight": round(8.0 * llama_cpp.llama_model_size(self._llm.model)
                                     / llama_cpp.llama_model_n_params(self._llm.model), 3),
            "vocab": self._vocab,
        }

    def close(self) -> None:
        """Free this backend's batch and llama.cpp's model and context."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        if self._llm is not None:
            self._llm.close()
            self._llm = None


def _model_desc(model: Any) -> str:
    buffer = (ctypes.c_char * 128)()
    llama_cpp.llama_model_desc(model, buffer, len(buffer))
    return buffer.value.decode(errors="replace")
