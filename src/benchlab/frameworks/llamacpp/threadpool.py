"""A persistent ggml threadpool for a llama.cpp context, as llama.cpp's own tools attach one.

``llama-bench`` and ``llama-cli`` create a threadpool (``ggml_threadpool_new``) and attach it
to their context (``llama_attach_threadpool``): its threads live as long as the context and,
with ``poll`` above 0, spin a little while waiting for the next graph. A context without one
(what ``llama-cpp-python`` 0.3.36 leaves: its bindings mark ``llama_attach_threadpool`` as a
TODO) makes ggml start and join a disposable pool for every ``llama_decode``, which costs a
decode step of a small model a tenth of its time (docs/performance.md, "Generative models").
The functions are called here through ``ctypes`` from the libraries the wheel ships.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import llama_cpp

__all__ = ["DEFAULT_POLL", "Threadpool"]

#: llama.cpp's tools' default polling level (0: threads sleep at once; 100: spin the most).
DEFAULT_POLL = 50
# ggml.h's GGML_MAX_N_THREADS: the size of the params' CPU mask. Checked at run time by
# reading back the defaults ggml fills in (a mismatch would shift every field after it).
_MAX_THREADS = 512


class _Params(ctypes.Structure):
    """ggml.h's ``struct ggml_threadpool_params``."""

    _fields_ = [("cpumask", ctypes.c_bool * _MAX_THREADS), ("n_threads", ctypes.c_int),
                ("prio", ctypes.c_int), ("poll", ctypes.c_uint32),
                ("strict_cpu", ctypes.c_bool), ("paused", ctypes.c_bool)]


def _library(stem: str) -> ctypes.CDLL:
    # The wheel's own copy, the one llama_cpp has loaded already (dlopen shares it).
    found = sorted((Path(llama_cpp.__file__).parent / "lib").glob(f"{stem}.*"))
    if not found:
        raise RuntimeError(f"llama-cpp-python {llama_cpp.__version__} ships no {stem} library")
    return ctypes.CDLL(str(found[0]))


class Threadpool:
    """A ggml threadpool of ``threads`` threads polling at ``poll``, attached to ``ctx`` (a
    ``llama_context`` pointer) for prefill and decode alike; :meth:`close` detaches and frees
    it."""

    def __init__(self, ctx: Any, threads: int, poll: int = DEFAULT_POLL) -> None:
        base, cpu = _library("libggml-base.so"), _library("libggml-cpu.so")
        llama = _library("libllama.so")
        base.ggml_threadpool_params_default.argtypes = [ctypes.c_int]
        base.ggml_threadpool_params_default.restype = _Params
        cpu.ggml_threadpool_new.argtypes = [ctypes.POINTER(_Params)]
        cpu.ggml_threadpool_new.restype = ctypes.c_void_p
        cpu.ggml_threadpool_free.argtypes = [ctypes.c_void_p]
        llama.llama_attach_threadpool.argtypes = [ctypes.c_void_p] * 3
        llama.llama_detach_threadpool.argtypes = [ctypes.c_void_p]
        params = base.ggml_threadpool_params_default(threads)
        if params.n_threads != threads or params.poll != DEFAULT_POLL:
            raise RuntimeError("ggml_threadpool_params does not have the layout benchlab "
                               f"expects (n_threads {params.n_threads}, poll {params.poll})")
        params.poll = poll
        self._pool = cpu.ggml_threadpool_new(ctypes.byref(params))
        if not self._pool:
            raise RuntimeError(f"ggml_threadpool_new failed ({threads} threads)")
        self._cpu, self._llama, self._ctx = cpu, llama, ctx
        self.threads, self.poll = threads, poll
        llama.llama_attach_threadpool(ctx, self._pool, None)

    def close(self) -> None:
        """Detach the pool from the context and free it."""
        if self._pool:
            self._llama.llama_detach_threadpool(self._ctx)
            self._cpu.ggml_threadpool_free(self._pool)
            self._pool = None
