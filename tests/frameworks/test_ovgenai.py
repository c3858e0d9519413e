"""The ``ovgenai`` framework: the adapter's choices (no runtime needed), and, with
``openvino-genai`` installed, its ``LLMPipeline`` on the stateful models benchlab made of
llama_15m (the session's zoo export: fp32, and NNCF's int8 and int4) against the
``transformers`` reference."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from benchlab.errors import UsageError
from benchlab.frameworks.base import Unsupported
from benchlab.frameworks.ovgenai import OvGenAiFramework
from benchlab.runner.config import RunnerConfig
from benchlab.schema.result import DetailKey
from benchlab.spec.types import FrameworkConfig

from .conftest import job_context, model_def
from .decoding import greedy, sqnr

BACKEND = "benchlab.frameworks.ovgenai.generative:OvGenAiDecoder"
FILES = {"ovgenai": "m.xml", "ovgenai_bin": "m.bin", "ovgenai_int4": "m4.xml",
         "ovgenai_int4_bin": "m4.bin", "reference": "m.ref.npz"}


def _generator(files: dict[str, str] = FILES) -> Any:
    return model_def(files, name="llama_15m", format="openvino",
                     metadata={"task": "generation"})


def test_it_runs_text_generators_at_each_precision_built() -> None:
    fw = OvGenAiFramework()
    found = fw.configurations(model_def({"onnx": "m.onnx"}), [])
    assert isinstance(found, Unsupported) and "ovgenai runs text generators only" in found.reason
    assert fw.configurations(_generator(), []) == [
        FrameworkConfig("ovgenai", {}), FrameworkConfig("ovgenai", {"precision": "int4"})]


def test_precision_picks_the_model_and_its_weights() -> None:
    from benchlab.schema.generation import Generation

    fw = OvGenAiFramework()
    files = {f"files.{k}": f"/t/{v}" for k, v in FILES.items()}
    for precision, model, weights in (("fp32", "/t/m.xml", "/t/m.bin"),
                                      ("int4", "/t/m4.xml", "/t/m4.bin")):
        ctx = job_context(_generator(), FrameworkConfig("ovgenai", {"precision": precision}),
                          files=files, generate=Generation(prompt_tokens=16, new_tokens=8))
        (invocation,) = fw.invocations(ctx)
        wire = json.loads(invocation.argv[-1])
        assert (wire["backend"], wire["model_path"]) == (BACKEND, model)
        assert wire["extra_files"] == {"weights": weights}
    model = _generator()
    assert "precision must be one of fp32, int8, int4" in fw.why_not_generative(
        model, {"precision": "q4_0"})
    assert "'ovgenai_int8'" in fw.why_not_generative(model, {"precision": "int8"})
    assert "threads must be a positive integer" in fw.why_not_generative(model, {"threads": "x"})
    assert "loop must be library or benchlab" in fw.why_not_generative(model, {"loop": "c++"})
    no_weights = _generator({k: v for k, v in FILES.items() if k != "ovgenai_bin"})
    assert "'ovgenai_bin'" in fw.why_not_generative(no_weights, {})
    with pytest.raises(UsageError, match="generative tests only"):
        fw.invocations(job_context(model, FrameworkConfig("ovgenai", {}), files=files))


# --- The library, on the stateful models of llama_15m ---------------------------------------

def _decoder(export: Any, **options: Any) -> Any:
    # A declared test dependency (the ovgenai extra is in 'all'): an import error fails.
    from benchlab.frameworks.ovgenai.generative import OvGenAiDecoder

    precision = options.get("precision", "fp32")
    tag = "" if precision == "fp32" else f"_{precision}"
    config = RunnerConfig(
        backend=BACKEND, model_path=str(export.files[f"ovgenai{tag}"]), threads=2,
        generate={"prompt_tokens": 16, "new_tokens": 8},
        reference=str(export.files["reference"]),
        extra_files={"weights": str(export.files[f"ovgenai{tag}_bin"])}, options=options)
    decoder = OvGenAiDecoder(config)
    decoder.load()
    return decoder


@pytest.fixture(scope="module")
def reference(llama_15m_export: Any) -> Any:
    from benchlab.runner.generate import load_generative_reference

    return load_generative_reference(str(llama_15m_export.files["reference"]))


@pytest.mark.slow
def test_the_stateful_fp32_model_is_the_reference_and_resets(llama_15m_export: Any,
                                                            reference: Any) -> None:
    import openvino as ov

    files = llama_15m_export.files
    model = ov.Core().read_model(str(files["ovgenai"]), str(files["ovgenai_bin"]))
    # What LLMPipeline drives: the cache is state (one variable per key and value of each
    # layer), never an input.
    assert sorted(i.get_any_name() for i in model.inputs) == [
        "attention_mask", "beam_idx", "input_ids", "position_ids"]
    assert len(model.get_sinks()) == 2 * 5
    decoder = _decoder(llama_15m_export, loop="benchlab")
    try:
        every = decoder.forward(reference.prompt, all_logits=True)
        assert every.shape == reference.logits.shape == (32, 8192)
        assert sqnr(every, reference.logits) > 60
        tokens, _ = greedy(decoder, reference.prompt, 32)
        assert tokens == reference.tokens[:32].tolist()
        decoder.reset()
        again = decoder.forward(reference.prompt, all_logits=True)
        np.testing.assert_allclose(again, every, rtol=0, atol=1e-3)
        info = decoder.info()
        assert info[DetailKey.PRECISION] == "fp32" and info[DetailKey.THREADS] == 2
        assert info["activations"] == "f32" and info["kv_cache"].endswith("f32")
    finally:
        decoder.close()


@pytest.mark.slow
@pytest.mark.parametrize("precision, element, floor, ceiling",
                         [("int8", "u8", 25, 70), ("int4", "u4", 5, 30)])
def test_nncf_compressed_weights_are_what_their_precision_says(
        llama_15m_export: Any, reference: Any, precision: str, element: str, floor: float,
        ceiling: float) -> None:
    import openvino as ov

    files = llama_15m_export.files
    model = ov.Core().read_model(str(files[f"ovgenai_{precision}"]),
                                 str(files[f"ovgenai_{precision}_bin"]))
    kinds = {op.get_output_element_type(0).get_type_name() for op in model.get_ops()
             if op.get_type_name() == "Constant"}
    assert element in kinds
    decoder = _decoder(llama_15m_export, precision=precision, loop="benchlab")
    try:
        assert decoder.info()[DetailKey.PRECISION] == precision
        every = decoder.forward(reference.prompt, all_logits=True)
        assert floor < sqnr(every, reference.logits) < ceiling
    finally:
        decoder.close()


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp32", "int4"])
def test_the_pipelines_loop_chooses_the_tokens_benchlabs_loop_chooses(
        llama_15m_export: Any, reference: Any, precision: str) -> None:
    """``loop=library`` (the default) times LLMPipeline.generate by its streamer; it must
    produce the very generation benchlab's loop does over the same compiled model."""
    from benchlab.runner.generate import time_generation

    library = _decoder(llama_15m_export, precision=precision)
    ours = _decoder(llama_15m_export, precision=precision, loop="benchlab")
    try:
        assert library.owns_loop and not ours.owns_loop
        firsts: list[int] = []
        times, chosen = time_generation(library, reference.prompt, 12, on_first=firsts.append)
        again, expected = time_generation(ours, reference.prompt, 12)
        assert chosen == expected and firsts == chosen[:1]
        assert len(times.tokens) == len(again.tokens) == 12
        assert times.start < times.tokens[0] and list(times.tokens) == sorted(times.tokens)
        if precision == "fp32":
            assert chosen == reference.tokens[:12].tolist()
        # The tokens' times are the pipeline's own records, on benchlab's clock: after the
        # start, and each no later than the streamer was handed it.
        streamed = library.last_streamer_times
        assert len(streamed) == 12
        assert all(produced <= handed for produced, handed in zip(times.tokens, streamed))
        assert library.last_perf_metrics.get_num_generated_tokens() == 12
        assert "the pipeline records" in library.info()["loop"]
        with pytest.raises(ValueError, match="loop=benchlab"):
            time_generation(library, reference.prompt, 4, np.asarray(reference.text[:8]))
    finally:
        library.close()
        ours.close()
