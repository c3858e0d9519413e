"""Runner-side OpenVINO GenAI backend: a stateful OpenVINO model
(:mod:`benchlab.exporting.ovgenai_export`) run by ``openvino-genai``'s ``LLMPipeline``.

* **Load.** ``LLMPipeline`` reads a folder holding ``openvino_model.xml`` and ``.bin``; the
  artifact cache stages them as two files, so :meth:`OvGenAiDecoder.load` links them into a
  private folder under those names. Every precision computes in f32
  (``INFERENCE_PRECISION_HINT``: the CPU plugin's own default is bf16 wherever the CPU has
  it, which would make a figure depend on the machine); fp32 also keeps its key/value cache
  in f32, where int8/int4 keep the plugin's default cache and its dynamic quantization of
  activations, as an application shipping compressed weights gets them (``info`` records
  both).
* **The loop.** By default (``loop=library``) each generation is one
  ``LLMPipeline.generate`` on the prompt's token ids, greedy, exactly the test's G tokens
  (``min_new_tokens``, end-of-sequence ignored), the clock read just before ``generate``.
  Each token's time is the pipeline's own record of when it was produced
  (``perf_metrics.raw_metrics.m_new_token_times``: milliseconds of the monotonic clock that
  ``time.perf_counter_ns`` reads too), not when its streamer hands it out: the pipeline
  calls the streamer from a thread of its own, which on a machine whose cores run the
  inference reaches each token late, the first most (measured on llama_15m, 2 threads:
  0.3 ms of a 9 ms TTFT in fp32, 1.8 ms of 7.6 in int4; docs/performance.md). The streamer
  still reports the first token to a load scenario (``on_first``), as a server streams it.
  The pipeline starts every generation from an empty cache, so a test with a
  depth (a context before the prompt) needs ``loop=benchlab``. ``loop=benchlab`` runs
  benchlab's loop (:func:`benchlab.runner.generate.time_generation`) over the same model
  compiled with the same properties, one request, its cache the model's state.
  ``bench/ovgenai_fidelity.py`` measures the streamer's times against the pipeline's own
  ``perf_metrics`` (docs/performance.md).
* **Logits** (the accuracy check, both loops): that request, whose outputs are the logits.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino_genai as ovg

from benchlab.runner.config import RunnerConfig
from benchlab.runner.generate import GenerationTimes, library_loop
from benchlab.schema.result import DetailKey

__all__ = ["OvGenAiDecoder", "greedy_generation", "link_model", "pipeline_properties"]

_MODEL_NAME = "openvino_model"
_NS_PER_MS = 1_000_000


def pipeline_properties(precision: str, threads: int | None) -> dict[str, Any]:
    """The compile properties of a ``precision`` model (see the module docstring): f32
    activations always, an f32 cache for fp32, the thread count where one is given."""
    properties: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "f32"}
    if precision == "fp32":
        properties["KV_CACHE_PRECISION"] = "f32"
    if threads:
        properties["INFERENCE_NUM_THREADS"] = int(threads)
    return properties


def link_model(folder: Path, model: str, weights: str) -> Path:
    """``folder`` as ``LLMPipeline`` reads it: links to the staged IR and its weights under
    the names it looks for; the IR's path."""
    xml = folder / f"{_MODEL_NAME}.xml"
    os.symlink(os.path.abspath(model), xml)
    os.symlink(os.path.abspath(weights), folder / f"{_MODEL_NAME}.bin")
    return xml


def greedy_generation(pipeline: Any) -> Any:
    """The pipeline's generation config set for greedy decoding that never stops early."""
    generation = pipeline.get_generation_config()
    generation.do_sample = False
    generation.ignore_eos = True
    # No tokenizer rides with the model, so the pipeline knows no end-of-sequence token (-1,
    # also in its stop tokens), and its check wants valid ones even when told to ignore them.
    generation.eos_token_id = 0
    generation.stop_token_ids = set()
    return generation


class _Clock(ovg.StreamerBase):
    """Reads the clock as the pipeline hands out each token (its streamer)."""

    def __init__(self, on_first: Callable[[int], None] | None) -> None:
        super().__init__()
        self.readings: list[int] = []
        self.tokens: list[int] = []
        self._on_first = on_first

    def write(self, token: Any) -> Any:
        now = time.perf_counter_ns()
        for value in (token if isinstance(token, list) else [token]):
            self.readings.append(now)
            self.tokens.append(int(value))
            if len(self.tokens) == 1 and self._on_first is not None:
                self._on_first(int(value))
        return ovg.StreamingStatus.RUNNING

    def end(self) -> None:
        """Nothing is held back to flush."""


class OvGenAiDecoder:
    """:class:`benchlab.runner.generate.GenerativeBackend` on ``openvino-genai``. Options:
    ``threads`` (or the test's: OpenVINO's inference threads; the plugin's default
    otherwise); ``loop`` (``library``, the default, or ``benchlab``: see the module
    docstring); ``precision`` picks the model in the adapter (and whether the cache is
    f32)."""

    def __init__(self, config: RunnerConfig) -> None:
        self.config = config
        self.model_path = config.model_file("the ovgenai backend needs its OpenVINO model")
        self._weights = config.extra_file(
            "weights", "the ovgenai backend needs the model's weights (extra_files)")
        self._precision = str(config.options.get("precision", "fp32"))
        self._properties = pipeline_properties(
            self._precision, config.options.get("threads", config.threads))
        #: Whether :func:`~benchlab.runner.generate.time_generation` runs the pipeline's loop.
        self.owns_loop = library_loop(config)
        #: The pipeline's own figures of the last generation (``perf_metrics``), for the
        #: fidelity bench.
        self.last_perf_metrics: Any = None
        self.last_streamer_times: tuple[int, ...] = ()
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._pipeline: Any = None
        self._generation: Any = None
        self._core = ov.Core()
        self._model: Any = None
        self._compiled: Any = None
        self._request: Any = None
        self._cached = 0
        self._vocab = 0

    def load(self) -> None:
        """Link the model into a private folder and open the pipeline on it (``loop=library``)
        or compile the request benchlab's loop runs."""
        self._folder = tempfile.TemporaryDirectory(prefix="benchlab-ovgenai-")
        folder = Path(self._folder.name)
        self._model = self._core.read_model(str(link_model(folder, self.model_path,
                                                           self._weights)))
        self._vocab = int(self._model.output("logits").get_partial_shape()[2].get_length())
        if self.owns_loop:
            self._pipeline = ovg.LLMPipeline(str(folder), "CPU", **self._properties)
            self._generation = greedy_generation(self._pipeline)
        else:
            self._open_request()

    def _open_request(self) -> Any:
        if self._request is None:
            self._compiled = self._core.compile_model(self._model, "CPU", self._properties)
            self._request = self._compiled.create_infer_request()
        return self._request

    def vocab_size(self) -> int:
        """The logits' width."""
        return self._vocab

    def reset(self) -> None:
        """The request's state (its cache) emptied."""
        if self._request is not None:
            self._request.reset_state()
        self._cached = 0

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        """Run ``tokens`` after the cached positions on the compiled request; the last
        position's logits, or every position's."""
        request = self._open_request()
        count = len(tokens)
        total = self._cached + count
        result = request.infer({
            "input_ids": np.asarray(tokens, dtype=np.int64)[None, :],
            "attention_mask": np.ones((1, total), dtype=np.int64),
            "position_ids": np.arange(self._cached, total, dtype=np.int64)[None, :],
            "beam_idx": np.zeros(1, dtype=np.int32)})
        self._cached = total
        logits = np.array(result["logits"][0], dtype=np.float32, copy=True)
        return logits if all_logits else logits[-1]

    def timed_generation(self, prompt: np.ndarray, new_tokens: int,
                         depth_tokens: np.ndarray | None = None,
                         on_first: Callable[[int], None] | None = None
                         ) -> tuple[GenerationTimes, list[int]]:
        """One greedy ``LLMPipeline.generate`` of ``new_tokens`` tokens, timed by its
        streamer (see the module docstring)."""
        if depth_tokens is not None and len(depth_tokens):
            raise ValueError("openvino-genai's LLMPipeline starts every generation from an "
                             "empty cache, so it cannot hold a depth before the prompt: run "
                             "the test with the option loop=benchlab")
        generation = self._generation
        generation.max_new_tokens = generation.min_new_tokens = new_tokens
        ids = np.asarray(prompt, dtype=np.int64)[None, :]
        inputs = ovg.TokenizedInputs(ov.Tensor(ids), ov.Tensor(np.ones_like(ids)))
        clock = _Clock(on_first)
        start = time.perf_counter_ns()
        result = self._pipeline.generate(inputs, generation, clock)
        self.last_perf_metrics = result.perf_metrics
        #: When the streamer was handed each token (benchlab's clock), beside the pipeline's
        #: own times: the fidelity bench and the tests compare the two.
        self.last_streamer_times = tuple(clock.readings)
        produced = tuple(int(ms * _NS_PER_MS)
                         for ms in result.perf_metrics.raw_metrics.m_new_token_times)
        if len(produced) != new_tokens or len(clock.tokens) != new_tokens:
            raise RuntimeError(f"LLMPipeline produced {len(produced)} tokens and streamed "
                               f"{len(clock.tokens)}, not the {new_tokens} asked for")
        return GenerationTimes(start, produced), clock.tokens

    def info(self) -> dict[str, Any]:
        """The library's version and the configuration it ran: each property as set, else
        the CPU plugin's default (read from the compiled request where there is one; never
        compiled for this, which would add a second copy of the weights to the memory the
        pipeline is measured with)."""
        def read(name: str) -> Any:
            if self._compiled is not None:
                value = self._compiled.get_property(name)
            else:
                value = self._properties.get(name, self._core.get_property("CPU", name))
            return getattr(value, "get_type_name", lambda: value)()

        threads = int(read("INFERENCE_NUM_THREADS"))
        return {
            DetailKey.RUNTIME_VERSION: ovg.__version__,
            DetailKey.PRECISION: self._precision,
            DetailKey.THREADS: threads or None,  # 0: the plugin decides
            "kv_cache": f"the model's state, {str(read('KV_CACHE_PRECISION')).lower()}",
            "activations": str(read("INFERENCE_PRECISION_HINT")).lower(),
            "dynamic_quantization_group": int(read("DYNAMIC_QUANTIZATION_GROUP_SIZE")),
            "loop": ("LLMPipeline.generate, its greedy search; each token at the time the "
                     "pipeline records producing it"
                     if self.owns_loop else
                     "benchlab's: one request per step, argmax over its logits"),
        }

    def close(self) -> None:
        """Free the pipeline, the request and the private folder."""
        self._pipeline = None
        self._request = self._compiled = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
