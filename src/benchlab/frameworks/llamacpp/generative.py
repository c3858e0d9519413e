"""Runner-side generative llama.cpp backend: a GGUF file in llama.cpp's C API (through
``llama-cpp-python``'s bindings), its key/value cache held in place by llama.cpp.

The model and context are made as ``llama-cli`` makes them (``llama_model_load_from_file``,
``llama_init_from_model``: threads, context size, batch, flash attention, cache type,
sequences), and every generation goes through one ``llama_batch`` of this backend's:

* **Logits.** Each token of a batch carries llama.cpp's output flag. A prefill flags its last
  position only, so llama.cpp computes the output layer (8192 × 384 here) for that position
  alone and copies out one row; every position is flagged only when ``all_logits`` asks for
  them (the accuracy check). One context serves both: a second context with every position's
  logits would hold a second cache and pay for the output layer on every prompt token.
* **Reset.** ``llama_memory_clear(llama_get_memory(ctx), data=True)`` empties the cache, its
  buffers included, and positions start again at 0.
* **Parallel sequences** (option ``parallel``, llama-server's ``-np``): the context holds that
  many sequences, each with its own cache cells (``n_ctx`` each, as llama.cpp sizes a
  non-unified cache), and :meth:`LlamaCppDecoder.forward_batch` decodes a step of several
  sequences, new prompts and next tokens together, in one ``llama_decode``: continuous
  batching, what a load scenario's server does with it (``runner.generative_scenario``).

``llama_cpp.Llama`` is not used: it cannot make a context of several sequences
(``n_seq_max`` is not among its arguments).
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Sequence
from typing import Any

import llama_cpp
import numpy as np

from benchlab.frameworks.llamacpp.threadpool import DEFAULT_POLL, Threadpool
from benchlab.runner.config import RunnerConfig
from benchlab.runner.generate import positions_needed
from benchlab.schema.result import DetailKey

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
    """:class:`benchlab.runner.generate.GenerativeBackend` on llama.cpp, and a
    :class:`benchlab.runner.generate.BatchingBackend` of ``parallel`` sequences. Options:
    ``threads`` (or the test's; all CPUs this process may use otherwise; prefill and decode
    alike), ``n_batch`` (512), ``flash_attn`` (false), ``cache_type`` (``f16``, llama.cpp's
    default; ``f32``, ``q8_0``), ``n_ctx`` (cells per sequence; default
    :func:`context_needed`), ``parallel`` (sequences, 1), ``poll`` (the attached threadpool's
    polling level, 0-100, 50 as llama.cpp's tools; ``none``: no pool attached, ggml's pool per
    call as ``llama-cpp-python`` leaves it)."""

    def __init__(self, config: RunnerConfig) -> None:
        options = config.options
        self.config = config
        self.model_path = config.model_file("the llamacpp backend needs a GGUF file")
        self._threads = int(options.get("threads") or config.threads or _cpus())
        self._n_ctx = int(options.get("n_ctx") or context_needed(config))
        self._parallel = int(options.get("parallel", 1))
        if self._parallel < 1:
            raise ValueError(f"parallel must be at least 1, got {self._parallel}")
        self._n_batch = min(int(options.get("n_batch", 512)), self._n_ctx * self._parallel)
        self._flash = _flag(options.get("flash_attn", False))
        self._cache_type = str(options.get("cache_type", "f16"))
        if self._cache_type not in _CACHE_TYPES:
            raise ValueError(f"cache_type must be one of {sorted(_CACHE_TYPES)}")
        poll = str(options.get("poll", DEFAULT_POLL)).lower()
        self._poll = None if poll == "none" else int(poll)
        self._pool: Threadpool | None = None
        self._model: Any = None
        self._ctx: Any = None
        self._cparams: Any = None
        self._batch: Any = None
        self._vocab = 0
        # Cached positions of each sequence, and the sequence each batch slot is set to.
        self._cached = [0] * self._parallel
        self._slot_sequence: list[int] = []

    def load(self) -> None:
        """Load the GGUF file, create the context and this backend's batch."""
        llama_cpp.llama_backend_init()
        # What Llama(verbose=False) does: llama.cpp's log reaches Python's logger, errors only.
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
        mparams = llama_cpp.llama_model_default_params()
        mparams.n_gpu_layers = 0
        self._model = llama_cpp.llama_model_load_from_file(self.model_path.encode(), mparams)
        if not self._model:
            raise RuntimeError(f"llama.cpp could not load {self.model_path}")
        trained = llama_cpp.llama_model_n_ctx_train(self._model)
        if self._n_ctx > trained:
            raise ValueError(f"n_ctx {self._n_ctx} is more than the model's {trained} positions")
        cparams = llama_cpp.llama_context_default_params()
        # A non-unified cache gives each sequence n_ctx / n_seq_max cells (padded to 256).
        cparams.n_ctx = self._n_ctx * self._parallel
        cparams.n_seq_max = self._parallel
        cparams.n_batch = cparams.n_ubatch = self._n_batch
        cparams.n_threads = cparams.n_threads_batch = self._threads
        cparams.flash_attn_type = (llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED if self._flash
                                   else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED)
        cparams.type_k = cparams.type_v = _CACHE_TYPES[self._cache_type]
        self._ctx = llama_cpp.llama_init_from_model(self._model, cparams)
        if not self._ctx:
            raise RuntimeError(f"llama.cpp could not create a context ({self._parallel} "
                               f"sequences of {self._n_ctx} cells)")
        self._cparams = cparams
        if self._poll is not None:
            self._pool = Threadpool(self._ctx, self._threads, self._poll)
        self._vocab = int(llama_cpp.llama_vocab_n_tokens(
            llama_cpp.llama_model_get_vocab(self._model)))
        size = self._n_batch
        self._batch = llama_cpp.llama_batch_init(size, 0, 1)
        batch = self._batch
        self._tokens = np.ctypeslib.as_array(batch.token, shape=(size,))
        self._positions = np.ctypeslib.as_array(batch.pos, shape=(size,))
        self._outputs = np.ctypeslib.as_array(batch.logits, shape=(size,))
        np.ctypeslib.as_array(batch.n_seq_id, shape=(size,))[:] = 1
        for i in range(size):  # every token in sequence 0 until a batch of several says else
            batch.seq_id[i][0] = 0
        self._slot_sequence = [0] * size
        self.reset()

    def vocab_size(self) -> int:
        """The logits' width (the GGUF file's vocabulary)."""
        return self._vocab

    @property
    def context(self) -> Any:
        """The ``llama_context`` pointer (``bench/llama_loop.py`` decodes on it directly)."""
        return self._ctx

    def sequences(self) -> int:
        """How many sequences one :meth:`forward_batch` may carry (option ``parallel``)."""
        return self._parallel

    def batch_tokens(self) -> int:
        """The most tokens one :meth:`forward_batch` may carry (``n_batch``)."""
        return self._n_batch

    def reset(self) -> None:
        """Empty llama.cpp's cache (metadata and buffers): the next call starts at 0."""
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(self._ctx), True)
        self._cached = [0] * self._parallel

    def reset_sequence(self, sequence: int) -> None:
        """Forget one sequence's cached positions; the others keep theirs."""
        llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(self._ctx), sequence, -1, -1)
        self._cached[sequence] = 0

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        """Decode ``tokens`` after sequence 0's cached positions, ``n_batch`` at a time; the
        last position's logits (only that position flagged for output), or every position's."""
        ids = np.asarray(tokens, dtype=np.int64)
        count = len(ids)
        self._check_room(0, count)
        every = np.empty((count, self._vocab), dtype=np.float32) if all_logits else None
        for start in range(0, count, self._n_batch):
            size = min(self._n_batch, count - start)
            self._place(0, ids[start:start + size], 0)
            self._outputs[:size] = 1 if all_logits else 0
            if start + size == count:
                self._outputs[size - 1] = 1
            self._decode(size)
            if every is not None:
                every[start:start + size] = np.ctypeslib.as_array(
                    llama_cpp.llama_get_logits(self._ctx), shape=(size, self._vocab))
        if every is not None:
            return every
        return self._logits_row(-1)

    def forward_batch(self, feeds: Sequence[tuple[int, np.ndarray]]) -> list[np.ndarray]:
        """One ``llama_decode`` of several sequences: each ``(sequence, tokens)`` continues
        that sequence's cached positions (a new prompt or its next token). The last
        position's logits of each feed, in order; at most :meth:`batch_tokens` in all."""
        total = sum(len(tokens) for _, tokens in feeds)
        if not feeds or total > self._n_batch:
            raise ValueError(f"a batch holds 1 to {self._n_batch} tokens (n_batch), not {total}")
        last = []
        offset = 0
        for sequence, tokens in feeds:
            ids = np.asarray(tokens, dtype=np.int64)
            self._check_room(sequence, len(ids))
            self._place(sequence, ids, offset)
            offset += len(ids)
            last.append(offset - 1)
        self._outputs[:total] = 0
        self._outputs[last] = 1
        self._decode(total)
        return [self._logits_row(index) for index in last]

    def _check_room(self, sequence: int, count: int) -> None:
        if self._cached[sequence] + count > self._n_ctx:
            raise ValueError(f"{self._cached[sequence]} cached + {count} new positions exceed "
                             f"the context of {self._n_ctx} (option n_ctx)")

    def _place(self, sequence: int, ids: np.ndarray, offset: int) -> None:
        """Put ``ids`` in the batch from slot ``offset``, at ``sequence``'s next positions."""
        size = len(ids)
        end = offset + size
        self._tokens[offset:end] = ids
        start = self._cached[sequence]
        self._positions[offset:end] = np.arange(start, start + size)
        self._cached[sequence] = start + size
        slots = self._slot_sequence
        for slot in range(offset, end):  # a ctypes write only where the slot's sequence changes
            if slots[slot] != sequence:
                self._batch.seq_id[slot][0] = slots[slot] = sequence

    def _decode(self, count: int) -> None:
        self._batch.n_tokens = count
        status = llama_cpp.llama_decode(self._ctx, self._batch)
        if status != 0:
            raise RuntimeError(f"llama_decode failed (status {status}) on a batch of {count} "
                               "tokens")

    def _logits_row(self, index: int) -> np.ndarray:
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self._ctx, index),
                                     shape=(self._vocab,)).copy()

    def precision(self) -> str:
        """The GGUF file's type (``general.file_type``), as benchlab names precisions."""
        raw = _meta(self._model, "general.file_type")
        if raw is None:
            return "unknown"
        return _FILE_TYPES.get(int(raw), f"llama_ftype {raw}")

    def info(self) -> dict[str, Any]:
        """The runtime's version and the context's effective settings."""
        cparams = self._cparams
        return {
            DetailKey.RUNTIME_VERSION: llama_cpp.__version__,
            DetailKey.PRECISION: self.precision(),
            DetailKey.THREADS: int(cparams.n_threads),
            "threads_batch": int(cparams.n_threads_batch),
            "n_ctx": int(llama_cpp.llama_n_ctx_seq(self._ctx)),
            "parallel": int(llama_cpp.llama_n_seq_max(self._ctx)),
            "n_batch": int(cparams.n_batch),
            "flash_attn": self._flash,
            "kv_cache": f"llama.cpp in place, {self._cache_type}",
            "threadpool": (f"attached, {self._pool.threads} threads, poll {self._pool.poll}"
                           if self._pool else "none attached: ggml's own per llama_decode"),
            "logits": "output flag on the last position only unless all positions are asked",
            "model_desc": _model_desc(self._model),
            # What the file really holds: a k-quant falls back to another type on rows that
            # are not a multiple of 256 long (llama_15m's Q4_K_M is mostly Q5_0).
            "bits_per_weight": round(8.0 * llama_cpp.llama_model_size(self._model)
                                     / llama_cpp.llama_model_n_params(self._model), 3),
            "vocab": self._vocab,
        }

    def close(self) -> None:
        """Free this backend's batch and llama.cpp's context and model."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx is not None:
            llama_cpp.llama_free(self._ctx)
            self._ctx = None
        if self._model is not None:
            llama_cpp.llama_model_free(self._model)
            self._model = None


def _meta(model: Any, key: str) -> str | None:
    """A GGUF metadata value as text, ``None`` when the file has no such key."""
    buffer = ctypes.create_string_buffer(256)
    if llama_cpp.llama_model_meta_val_str(model, key.encode(), buffer, len(buffer)) < 0:
        return None
    return buffer.value.decode(errors="replace")


def _model_desc(model: Any) -> str:
    buffer = (ctypes.c_char * 128)()
    llama_cpp.llama_model_desc(model, buffer, len(buffer))
    return buffer.value.decode(errors="replace")
