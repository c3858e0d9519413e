"""The ``ortgenai`` framework: the adapter's choices (no runtime needed), and, with
``onnxruntime-genai`` installed, its Generator on the model its own builder made of llama_15m
(the session's zoo export) against the ``transformers`` reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchlab.errors import UsageError
from benchlab.frameworks.base import Unsupported
from benchlab.frameworks.ortgenai import OrtGenAiFramework
from benchlab.runner.config import RunnerConfig
from benchlab.schema.result import DetailKey
from benchlab.spec.types import FrameworkConfig

from .conftest import job_context, model_def
from .decoding import greedy, sqnr

BACKEND = "benchlab.frameworks.ortgenai.generative:OrtGenAiDecoder"
FILES = {"genai_onnx": "m.onnx", "genai_config": "m.json", "genai_onnx_int4": "m4.onnx",
         "genai_config_int4": "m4.json", "reference": "m.ref.npz"}


def _generator(files: dict[str, str] = FILES) -> Any:
    return model_def(files, name="llama_15m", format="onnx", metadata={"task": "generation"})


def _generation() -> Any:
    from benchlab.schema.generation import Generation

    return Generation(prompt_tokens=16, new_tokens=8)


def test_it_runs_text_generators_fp32_and_int4_where_built() -> None:
    fw = OrtGenAiFramework()
    assert isinstance(fw.configurations(model_def({"onnx": "m.onnx"}), []), Unsupported)
    assert fw.configurations(_generator(), []) == [
        FrameworkConfig("ortgenai", {}), FrameworkConfig("ortgenai", {"precision": "int4"})]
    only_fp32 = {k: v for k, v in FILES.items() if "int4" not in k}
    assert fw.configurations(_generator(only_fp32), []) == [FrameworkConfig("ortgenai", {})]


def test_precision_picks_the_model_and_its_config() -> None:
    fw = OrtGenAiFramework()
    files = {f"files.{k}": f"/t/{v}" for k, v in FILES.items()}
    for precision, model, config in (("fp32", "/t/m.onnx", "/t/m.json"),
                                     ("int4", "/t/m4.onnx", "/t/m4.json")):
        ctx = job_context(_generator(), FrameworkConfig("ortgenai", {"precision": precision}),
                          files=files, generate=_generation())
        (invocation,) = fw.invocations(ctx)
        wire = json.loads(invocation.argv[-1])
        assert (wire["backend"], wire["model_path"]) == (BACKEND, model)
        assert wire["extra_files"] == {"genai_config": config}
    model = _generator()
    assert "precision must be one of fp32, int4" in fw.why_not_generative(
        model, {"precision": "int8"})
    assert "threads must be a positive integer" in fw.why_not_generative(model, {"threads": 0})
    assert "loop must be library or benchlab" in fw.why_not_generative(model, {"loop": "c++"})
    assert fw.why_not_generative(model, {"loop": "benchlab"}) is None
    assert "no option" in fw.why_not_generative(model, {"providers": "cuda"})
    no_config = _generator({k: v for k, v in FILES.items() if k != "genai_config"})
    assert "'genai_config'" in fw.why_not_generative(no_config, {})
    with pytest.raises(UsageError, match="generative tests only"):
        fw.invocations(job_context(model, FrameworkConfig("ortgenai", {}), files=files))


# --- The library, on the builder's models of llama_15m -------------------------------------

def _decoder(export: Any, **options: Any) -> Any:
    # A declared test dependency (the ortgenai extra is in 'all'): an import error fails.
    from benchlab.frameworks.ortgenai.generative import OrtGenAiDecoder

    precision = options.get("precision", "fp32")
    tag = "" if precision == "fp32" else f"_{precision}"
    config = RunnerConfig(
        backend=BACKEND, model_path=str(export.files[f"genai_onnx{tag}"]), threads=2,
        generate={"prompt_tokens": 16, "new_tokens": 8}, reference=str(
            export.files["reference"]), extra_files={
                "genai_config": str(export.files[f"genai_config{tag}"])}, options=options)
    decoder = OrtGenAiDecoder(config)
    decoder.load()
    return decoder


@pytest.fixture(scope="module")
def reference(llama_15m_export: Any) -> Any:
    from benchlab.runner.generate import load_generative_reference

    return load_generative_reference(str(llama_15m_export.files["reference"]))


@pytest.mark.slow
def test_the_builders_fp32_model_is_the_reference_and_resets(llama_15m_export: Any,
                                                            reference: Any) -> None:
    decoder = _decoder(llama_15m_export)
    try:
        every = decoder.forward(reference.prompt, all_logits=True)
        assert every.shape == reference.logits.shape == (32, 8192)
        # The builder's own graph (its attention and rotary kernels), fp32: measured 70 dB+.
        assert sqnr(every, reference.logits) > 60
        last = decoder.forward(np.array([int(reference.tokens[0])]))
        assert last.shape == (8192,)
        tokens, _ = greedy(decoder, reference.prompt, 32)
        assert tokens == reference.tokens[:32].tolist()
        # A new generator: the next prompt starts at position 0, not after the previous text.
        decoder.reset()
        again = decoder.forward(reference.prompt, all_logits=True)
        np.testing.assert_allclose(again, every, rtol=0, atol=1e-3)
        info = decoder.info()
        assert info[DetailKey.PRECISION] == "fp32" and info[DetailKey.THREADS] == 2
        with pytest.raises(ValueError, match="exceed"):
            decoder.forward(np.zeros(10_000, dtype=np.int64))
    finally:
        decoder.close()


@pytest.mark.slow
def test_the_builders_int4_model_has_matmulnbits_weights(llama_15m_export: Any,
                                                         reference: Any) -> None:
    import onnx

    graph = onnx.load(str(llama_15m_export.files["genai_onnx_int4"]), load_external_data=False)
    kinds = {node.op_type for node in graph.graph.node}
    assert "MatMulNBits" in kinds
    quantized = next(n for n in graph.graph.node if n.op_type == "MatMulNBits")
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in quantized.attribute}
    assert attributes["bits"] == 4 and attributes["block_size"] == 32
    config = json.loads(Path(llama_15m_export.files["genai_config_int4"]).read_text())
    assert config["model"]["type"] == "llama" and config["model"]["vocab_size"] == 8192
    decoder = _decoder(llama_15m_export, precision="int4")
    try:
        assert decoder.info()[DetailKey.PRECISION] == "int4"
        every = decoder.forward(reference.prompt, all_logits=True)
        # 4-bit weights: measured 12.5 dB (llama.cpp's Q4_0, also blocks of 32: 12.5 dB).
        assert 8 < sqnr(every, reference.logits) < 30
    finally:
        decoder.close()


@pytest.mark.slow
def test_genais_own_loop_chooses_the_tokens_benchlabs_loop_chooses(llama_15m_export: Any,
                                                                    reference: Any) -> None:
    """``loop=library`` (the default) times GenAI's generate_next_token loop; it must produce
    the very generation benchlab's loop does, timed by the same definitions."""
    from benchlab.runner.generate import time_generation

    library = _decoder(llama_15m_export)
    ours = _decoder(llama_15m_export, loop="benchlab")
    try:
        assert library.owns_loop and not ours.owns_loop
        depth = np.asarray(reference.text[:40])
        times, chosen = time_generation(library, reference.prompt, 12, depth)
        again, expected = time_generation(ours, reference.prompt, 12, depth)
        assert chosen == expected
        assert len(times.tokens) == len(again.tokens) == 12
        assert times.start < times.tokens[0] and list(times.tokens) == sorted(times.tokens)
        # Without depth the generation is the reference's greedy continuation.
        assert time_generation(library, reference.prompt, 8)[1] == reference.tokens[:8].tolist()
        assert "generate_next_token" in library.info()["loop"]
    finally:
        library.close()
        ours.close()
