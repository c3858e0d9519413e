"""Runner-side generative ExecuTorch backend: the zoo's ``decoder_pte`` program, whose key/value
cache lives inside it as mutable buffers (:mod:`benchlab.exporting.pte_decoder`), run by the
ExecuTorch runtime with the XNNPACK delegate and ExecuTorch's LLM kernels.

The program's ``forward(tokens [1, T], input_pos [1], logit_positions [K])`` writes the new
tokens' keys and values into its buffers at ``input_pos`` and attends over positions ``0 ..
input_pos + T - 1`` only; this backend tracks the position. So nothing of the cache crosses
into Python or back on any call, unlike the cache-graph backends (:mod:`benchlab.runner.kvgraph`),
and :meth:`ExecuTorchDecoder.reset` is setting the position to 0: what an earlier generation
left beyond the position is never read.

Like :mod:`benchlab.frameworks.executorch.backend`, this imports the compiled runtime, not
``executorch.runtime`` (which loads the whole export stack). The LLM kernels
(``llama::update_cache``, ``llama::custom_sdpa``) are in a library of the ``executorch`` wheel
that registers them with the runtime when loaded; it links against libtorch, so torch is
imported first.
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from executorch.extension.pybindings import _portable_lib as portable_lib

from benchlab.runner.config import RunnerConfig
from benchlab.schema.result import DetailKey

__all__ = ["ExecuTorchDecoder", "load_llm_kernels"]

_VERSION = importlib.metadata.version("executorch")
_METHOD = "forward"
#: The program's constant methods read at load (zoo/pte_decoder.py writes them).
_SIZES = ("get_max_context_len", "get_max_seq_len", "get_vocab_size")
# Where the wheel keeps its LLM kernel library, beside the pybindings (executorch/extension/).
_KERNELS_DIR = Path(portable_lib.__file__).resolve().parents[1] / "llm" / "custom_ops"


def load_llm_kernels() -> str:
    """Register ExecuTorch's LLM kernels with the runtime (once per process); the library."""
    found = sorted(_KERNELS_DIR.glob("*custom_ops_aot_lib.*"))
    if not found:
        raise RuntimeError(f"executorch {_VERSION} has no LLM kernel library in {_KERNELS_DIR} "
                           "(libcustom_ops_aot_lib), which decoder programs need")
    path = str(found[0])
    if path not in torch.ops.loaded_libraries:
        torch.ops.load_library(path)
    return path


class ExecuTorchDecoder:
    """:class:`benchlab.runner.generate.GenerativeBackend` over a ``decoder_pte`` program.

    Options: ``threads`` (or the test's): the size of ExecuTorch's shared threadpool, which
    XNNPACK and the attention kernel run on (unset: the runtime's own choice, one per core);
    ``precision`` (``fp32`` or ``8da4w``) picks the program in the adapter.
    """

    def __init__(self, config: RunnerConfig) -> None:
        self._path = config.model_file("executorch generates from a decoder .pte program")
        self._config = config
        threads = config.options.get("threads", config.threads)
        if threads:
            # Nothing has run on the pool yet, so resetting it is safe (see backend.py).
            portable_lib._unsafe_reset_threadpool(int(threads))
        self._kernels = ""
        self._program: Any = None
        self._method: Any = None
        self._vocab = 0
        self._max_context = 0
        self._max_seq = 0
        self._position = 0
        self._pos = torch.zeros(1, dtype=torch.int64)

    def load(self) -> None:
        """Load the program and its method (XNNPACK initialises its partitions here)."""
        self._kernels = load_llm_kernels()
        program = portable_lib._load_program(
            str(self._path), enable_etdump=False, debug_buffer_size=0,
            program_verification=portable_lib.Verification.InternalConsistency)
        names = {program.get_method_name(i) for i in range(program.num_methods())}
        missing = sorted({_METHOD, *_SIZES} - names)
        if missing:
            raise ValueError(f"{os.path.basename(str(self._path))} is not a decoder program: "
                             f"it has no method {', '.join(missing)} (it has "
                             f"{', '.join(sorted(names))})")
        sizes = [int(program.load_method(name)([])[0]) for name in _SIZES]
        self._max_context, self._max_seq, self._vocab = sizes
        self._method = program.load_method(_METHOD)
        self._program = program  # the method borrows from it
        self.reset()

    def vocab_size(self) -> int:
        """The logits' width."""
        return self._vocab

    def reset(self) -> None:
        """Start again at position 0 (the program never reads past the position it is at)."""
        self._position = 0

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        """Run ``tokens`` after the cached positions; the last or every position's logits.

        More tokens than one call of the program takes (``get_max_seq_len``) run in chunks,
        as ExecuTorch's own runner prefills.
        """
        count = len(tokens)
        if count < 1 or self._position + count > self._max_context:
            raise ValueError(f"{count} token(s) at position {self._position} do not fit the "
                             f"program's cache of {self._max_context} positions")
        ids = torch.from_numpy(np.ascontiguousarray(tokens, dtype=np.int64))[None, :]
        chunks = []
        for first in range(0, count, self._max_seq):
            part = ids[:, first:first + self._max_seq]
            size = part.shape[1]
            self._pos[0] = self._position
            wanted = torch.arange(size) if all_logits else torch.tensor([size - 1])
            chunks.append(self._method([part, self._pos, wanted])[0][0])
            self._position += size
        if not all_logits:
            return chunks[-1][0].numpy()
        return (chunks[0] if len(chunks) == 1 else torch.cat(chunks)).numpy()

    def cached_positions(self) -> int:
        """How many positions the cache holds now."""
        return self._position

    def info(self) -> dict[str, Any]:
        """ExecuTorch version, threadpool size, delegate, precision, the cache."""
        get_threads = getattr(portable_lib, "_threadpool_get_thread_count", None)
        return {
            "runtime": "executorch",
            DetailKey.RUNTIME_VERSION: _VERSION,
            DetailKey.THREADS: int(get_threads()) if get_threads else self._config.threads,
            "delegate": "xnnpack",
            DetailKey.PRECISION: str(self._config.options.get("precision", "fp32")),
            "kv_cache": (f"in the program: mutable buffers of {self._max_context} positions, "
                         "updated in place (llama::update_cache, llama::custom_sdpa)"),
            "max_seq_len": self._max_seq,
            "llm_kernels": os.path.basename(self._kernels),
            "model_file": os.path.basename(str(self._path)),
        }
