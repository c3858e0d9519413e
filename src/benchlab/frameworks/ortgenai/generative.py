"""Runner-side ONNX Runtime GenAI backend: a model built by ``onnxruntime-genai``'s builder, run
by its ``Generator``, its key/value cache held by GenAI.

* **Load.** GenAI reads a model folder (``genai_config.json`` naming the model file). The
  artifact cache stages the model and its config as two files, so :meth:`load` makes a private
  folder: a link to the staged model and a copy of the config naming it, with the thread
  count in it.
* **Cache.** One ``Generator`` per generation, as an application makes one per request, its
  cache allocated for the positions the test needs (``max_length``, GenAI's shared
  past/present buffer).
* **The loop.** By default (``loop=library``) GenAI runs its own loop, as an application
  shipping it does: the prompt appended (``append_tokens``), then ``generate_next_token``
  per token, GenAI's greedy search in C++ choosing it; the clock is read as each call hands
  a token out (:meth:`OrtGenAiDecoder.timed_generation`). ``loop=benchlab`` runs benchlab's
  own loop instead (:func:`benchlab.runner.generate.time_generation`: ``forward`` per step,
  Python's ``argmax`` over ``get_logits``), as for the runtimes without a loop of their own.
  ``bench/genai_fidelity.py`` measured both against GenAI's benchmark script's timing
  (docs/performance.md).
* **Logits** (the accuracy check, both loops): ``append_tokens`` then the last position's
  ``get_logits``, or every position's (the ``logits`` output).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime_genai as og

from benchlab.runner.config import RunnerConfig
from benchlab.runner.generate import GenerationTimes, library_loop, positions_needed
from benchlab.schema.result import DetailKey

__all__ = ["OrtGenAiDecoder"]

_MODEL_NAME = "model.onnx"


class OrtGenAiDecoder:
    """:class:`benchlab.runner.generate.GenerativeBackend` on ``onnxruntime-genai``. Options:
    ``threads`` (or the test's: ONNX Runtime's intra-op threads; GenAI's default otherwise);
    ``loop`` (``library``, the default, or ``benchlab``: see the module docstring);
    ``precision`` picks the model in the adapter."""

    def __init__(self, config: RunnerConfig) -> None:
        self.config = config
        self.model_path = config.model_file("the ortgenai backend needs a GenAI model file")
        self._config_path = config.extra_file(
            "genai_config", "the ortgenai backend needs its genai_config file (extra_files)")
        threads = config.options.get("threads", config.threads)
        self._threads = int(threads) if threads else None
        self._max_length = positions_needed(config)
        #: Whether :func:`~benchlab.runner.generate.time_generation` runs GenAI's own loop.
        self.owns_loop = library_loop(config)
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._model: Any = None
        self._generator: Any = None
        self._params: Any = None
        self._vocab = 0

    def load(self) -> None:
        """Open the model through a private copy of its config; make the generator."""
        settings = json.loads(Path(self._config_path).read_text())
        decoder = settings["model"]["decoder"]
        # GenAI takes only a file name under the model's folder: the staged model is linked
        # in (its weights are inside it, so one link is the whole model).
        decoder["filename"] = _MODEL_NAME
        if self._threads:
            decoder.setdefault("session_options", {})["intra_op_num_threads"] = self._threads
        self._vocab = int(settings["model"]["vocab_size"])
        self._folder = tempfile.TemporaryDirectory(prefix="benchlab-genai-")
        os.symlink(os.path.abspath(self.model_path), Path(self._folder.name, _MODEL_NAME))
        Path(self._folder.name, "genai_config.json").write_text(json.dumps(settings))
        self._model = og.Model(self._folder.name)
        self._params = og.GeneratorParams(self._model)
        # Greedy, and never stopped early: an end-of-sequence token would end GenAI's loop
        # before the test's G tokens (min_length holds it back, as GenAI's benchmark does).
        self._params.set_search_options(do_sample=False, max_length=self._max_length,
                                        min_length=self._max_length)
        self.reset()

    def vocab_size(self) -> int:
        """The logits' width (the config's vocabulary)."""
        return self._vocab

    def reset(self) -> None:
        """A new generator, its cache empty: one per generation, as an application makes one
        per request (GenAI's benchmark script too). Its buffers are allocated by the first
        ``append_tokens``, inside the timed prompt, as there."""
        self._generator = None  # the old cache freed before the new one is made
        self._generator = og.Generator(self._model, self._params)

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        """Append ``tokens`` after the cached positions; the last position's logits, or every
        position's."""
        count = len(tokens)
        cached = int(self._generator.token_count())
        if cached + count > self._max_length:
            raise ValueError(f"{cached} cached + {count} new positions exceed the "
                             f"{self._max_length} the generator was made for")
        self._generator.append_tokens(np.asarray(tokens, dtype=np.int32))
        if all_logits:
            return np.asarray(self._generator.get_output("logits"), dtype=np.float32)[0, -count:]
        return np.asarray(self._generator.get_logits(), dtype=np.float32).reshape(-1)

    def timed_generation(self, prompt: np.ndarray, new_tokens: int,
                         depth_tokens: np.ndarray | None = None,
                         on_first: Callable[[int], None] | None = None
                         ) -> tuple[GenerationTimes, list[int]]:
        """One greedy generation by GenAI's own loop: the clock read before the prompt is
        appended and as each ``generate_next_token`` returns (the first chooses from the
        prompt's logits; each later one runs the model on the previous token, then chooses)."""
        clock = time.perf_counter_ns
        self.reset()
        generator = self._generator
        if depth_tokens is not None and len(depth_tokens):
            generator.append_tokens(np.asarray(depth_tokens, dtype=np.int32))
        readings: list[int] = []
        start = clock()
        generator.append_tokens(np.asarray(prompt, dtype=np.int32))
        for index in range(new_tokens):
            generator.generate_next_token()
            readings.append(clock())
            if index == 0 and on_first is not None:
                on_first(int(generator.get_next_tokens()[0]))
        sequence = generator.get_sequence(0)
        chosen = [int(t) for t in sequence[len(sequence) - new_tokens:]]
        return GenerationTimes(start, tuple(readings)), chosen

    def info(self) -> dict[str, Any]:
        """The library's version and the configuration it ran."""
        return {
            DetailKey.RUNTIME_VERSION: og.__version__,
            DetailKey.PRECISION: str(self.config.options.get("precision", "fp32")),
            DetailKey.THREADS: self._threads,
            "kv_cache": f"GenAI's, {self._max_length} positions (shared past/present buffer)",
            "loop": ("GenAI's: generate_next_token per token, its greedy search"
                     if self.owns_loop else
                     "benchlab's: append_tokens per step, argmax over get_logits"),
        }

    def close(self) -> None:
        """Free the generator and the model, and the private config folder."""
        self._generator = None
        self._model = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
