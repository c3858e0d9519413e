"""The ``llamacpp`` framework: the zoo's GGUF export (checked without llama.cpp, by reading the
file back with ``gguf-py``), the adapter's choices, and, with ``llama-cpp-python`` installed,
llama.cpp's generations of llama_15m against the ``transformers`` reference.

llama_15m is exported once per module (``decoder_context`` then :func:`export_gguf`): about
half a minute, most of it importing torch and training the tokenizer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchlab.errors import UsageError
from benchlab.frameworks.base import Unsupported
from benchlab.frameworks.llamacpp import LlamaCppFramework
from benchlab.protocol.lines import parse_output
from benchlab.runner.config import RunnerConfig
from benchlab.schema.result import DetailKey, Metric
from benchlab.spec.types import FrameworkConfig

from .conftest import job_context, model_def
from .decoding import greedy, runner_values, sqnr

BACKEND = "benchlab.frameworks.llamacpp.generative:LlamaCppDecoder"
GENERATION = {"prompt_tokens": 16, "new_tokens": 8}
GENERATIVE_MODEL = {"gguf": "m.gguf", "gguf_q8_0": "m.q8_0.gguf", "reference": "m.ref.npz"}


# --- The adapter (no runtime needed) -----------------------------------------------------

def _generator(files: dict[str, str] = GENERATIVE_MODEL) -> Any:
    return model_def(files, name="llama_15m", format="gguf",
                     metadata={"task": "generation"})


def test_it_runs_text_generators_only() -> None:
    fw = LlamaCppFramework()
    found = fw.configurations(model_def({"onnx": "m.onnx"}), [])
    assert isinstance(found, Unsupported)
    assert "llamacpp runs text generators only" in found.reason
    # A text generator: fp32, and each quantized type where the model has that file.
    assert fw.configurations(_generator(), []) == [
        FrameworkConfig("llamacpp", {}), FrameworkConfig("llamacpp", {"precision": "q8_0"})]
    every = {**GENERATIVE_MODEL, "gguf_q4_0": "m.q4_0.gguf", "gguf_q4_k_m": "m.q4_k_m.gguf"}
    assert [c.options.get("precision") for c in fw.configurations(_generator(every), [])] == [
        None, "q8_0", "q4_0", "q4_k_m"]
    assert fw.configurations(_generator({"gguf": "m.gguf"}), []) == [
        FrameworkConfig("llamacpp", {})]


def test_precision_picks_the_gguf_file_and_options_are_checked() -> None:
    fw = LlamaCppFramework()
    model = _generator()
    files = {f"files.{k}": f"/t/{v}" for k, v in GENERATIVE_MODEL.items()}
    for precision, path in (("fp32", "/t/m.gguf"), ("q8_0", "/t/m.q8_0.gguf")):
        ctx = job_context(model, FrameworkConfig("llamacpp", {"precision": precision}),
                          files=files, generate=_generation())
        (invocation,) = fw.invocations(ctx)
        wire = json.loads(invocation.argv[-1])
        assert wire["backend"] == BACKEND
        assert wire["model_path"] == path
        assert wire["reference"] == "/t/m.ref.npz"
    no_q8 = _generator({"gguf": "m.gguf"})
    assert "gguf_q8_0" in fw.why_not_generative(no_q8, {"precision": "q8_0"})
    assert "no option" in fw.why_not_generative(model, {"providers": "cpu"})
    assert "cache_type" in fw.why_not_generative(model, {"cache_type": "f8"})
    assert "flash_attn" in fw.why_not_generative(model, {"cache_type": "q8_0"})
    assert fw.why_not_generative(model, {"cache_type": "q8_0", "flash_attn": True}) is None
    assert "n_batch" in fw.why_not_generative(model, {"n_batch": 0})
    assert "precision" in fw.why_not_generative(model, {"precision": "int4"})
    assert "poll must be 0 to 100 or none" in fw.why_not_generative(model, {"poll": 101})
    assert fw.why_not_generative(model, {"poll": "none"}) is None


def test_parallel_sequences_are_for_a_server_or_offline_scenario() -> None:
    from benchlab.schema.scenario import Scenario

    fw = LlamaCppFramework()
    files = {f"files.{k}": f"/t/{v}" for k, v in GENERATIVE_MODEL.items()}
    parallel = FrameworkConfig("llamacpp", {"parallel": 4})
    with pytest.raises(UsageError, match="only a server or offline scenario has; test 't0' "
                                         "runs one stream of generations"):
        fw.invocations(job_context(_generator(), parallel, files=files,
                                   generate=_generation()))
    (invocation,) = fw.invocations(job_context(
        _generator(), parallel, files=files, generate=_generation(),
        scenario=Scenario("offline")))
    assert json.loads(invocation.argv[-1])["options"]["parallel"] == 4
    assert "parallel must be a positive integer" in fw.why_not_generative(
        _generator(), {"parallel": 0})


def test_a_forward_pass_test_is_a_usage_error() -> None:
    ctx = job_context(_generator(), FrameworkConfig("llamacpp", {}),
                      files={"files.gguf": "/t/m.gguf"})
    with pytest.raises(UsageError, match="generative tests only"):
        LlamaCppFramework().invocations(ctx)


def test_a_forward_pass_model_is_not_for_llama_cpp_installed_or_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where llama-cpp-python is missing, a forward-pass model's skip says llama.cpp does not
    run it, not to install llama-cpp-python."""
    import benchlab.harness.planner as harness
    from benchlab.frameworks.common import Availability
    from benchlab.spec.types import BenchmarkSpec, TestCase
    from benchlab.targets.host import HostTarget

    class NotInstalled(LlamaCppFramework):
        def availability(self) -> Availability:
            return Availability(ok=False, reason="llama-cpp-python is not installed")

    monkeypatch.setattr(harness, "load_framework", lambda name: NotInstalled())
    spec = BenchmarkSpec(path=tmp_path / "s.json", model=model_def({"onnx": "m.onnx"}),
                         tests=(TestCase(identifier="t"),))
    found = harness.plan([spec], HostTarget(), frameworks=[FrameworkConfig("llamacpp", {})],
                         device="here")
    assert not found.jobs
    assert [s.reason for s in found.skipped] == ["llamacpp runs text generators only"]
    generator = BenchmarkSpec(path=tmp_path / "g.json", model=_generator(),
                              tests=(TestCase(identifier="t"),))
    found = harness.plan([generator], HostTarget(),
                         frameworks=[FrameworkConfig("llamacpp", {})], device="here")
    assert [s.reason for s in found.skipped] == ["llama-cpp-python is not installed"]


def test_availability_does_not_import_the_runtime() -> None:
    probe = ("import json, sys\n"
             "from benchlab.frameworks.llamacpp import LlamaCppFramework\n"
             "ok = LlamaCppFramework().availability().ok\n"
             "print(json.dumps([ok, 'llama_cpp' in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    ok, imported = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not imported
    try:
        import importlib.util

        assert ok == (importlib.util.find_spec("llama_cpp") is not None)
    except ImportError:  # pragma: no cover
        pass


def _generation() -> Any:
    from benchlab.schema.generation import Generation

    return Generation(**GENERATION)


# --- The GGUF file, read back with gguf-py (no llama.cpp) ---------------------------------

@dataclass(frozen=True)
class Exported:
    """llama_15m's export context, its GGUF file, reference and tokenizer."""

    ctx: Any
    gguf: Path
    reference: Path
    tokenizer: Path


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    pytest.importorskip("gguf")
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from benchlab.frameworks.pytorch.backend import build_from_entry
    from benchlab.exporting.generative import decoder_context
    from benchlab.exporting.gguf_export import export_gguf

    out = tmp_path_factory.mktemp("gguf")
    job = {"name": "llama_15m", "entry": "benchlab.zoo.archs.llama:llama_15m",
           "task": "generation"}
    ctx, _ = decoder_context(job, out, build_from_entry)
    written = export_gguf(ctx)
    assert written == {"gguf": out / "llama_15m.gguf"}
    return Exported(ctx=ctx, gguf=written["gguf"], reference=ctx.reference,
                    tokenizer=ctx.extra_files["tokenizer"])


def _fields(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    import gguf

    reader = gguf.GGUFReader(str(path))
    fields = {name: field.contents() for name, field in reader.fields.items()}
    tensors = {t.name: t for t in reader.tensors}
    return fields, tensors


def test_the_gguf_file_holds_every_hyperparameter(exported: Exported) -> None:
    fields, _ = _fields(exported.gguf)
    shape = exported.ctx.torch_module().shape
    assert fields["general.architecture"] == "llama"
    assert fields["general.file_type"] == 0  # LLAMA_FTYPE_ALL_F32
    assert fields["llama.context_length"] == shape.max_positions == 2048
    assert fields["llama.embedding_length"] == shape.dim
    assert fields["llama.block_count"] == shape.layers
    assert fields["llama.feed_forward_length"] == shape.hidden
    assert fields["llama.attention.head_count"] == shape.heads
    assert fields["llama.attention.head_count_kv"] == shape.kv_heads
    assert fields["llama.rope.dimension_count"] == shape.head_dim
    assert fields["llama.rope.freq_base"] == shape.rope_theta
    assert fields["llama.attention.layer_norm_rms_epsilon"] == pytest.approx(shape.norm_eps)
    assert fields["llama.vocab_size"] == shape.vocab


def test_the_tensors_are_the_transformers_weights(exported: Exported) -> None:
    import gguf

    from benchlab.exporting.gguf_export import rope_deinterleave

    _, tensors = _fields(exported.gguf)
    decoder = exported.ctx.torch_module()
    shape, inner = decoder.shape, decoder.inner

    def hf(tensor: Any) -> np.ndarray:
        return tensor.detach().numpy()

    want = {"token_embd.weight": hf(inner.embed_tokens.weight),
            "output_norm.weight": hf(inner.norm.weight),
            "output.weight": hf(decoder.lm_head.weight)}
    for i, layer in enumerate(inner.layers):
        attn, mlp = layer.self_attn, layer.mlp
        want.update({
            f"blk.{i}.attn_norm.weight": hf(layer.input_layernorm.weight),
            f"blk.{i}.attn_q.weight": hf(attn.q_proj.weight),
            f"blk.{i}.attn_k.weight": hf(attn.k_proj.weight),
            f"blk.{i}.attn_v.weight": hf(attn.v_proj.weight),
            f"blk.{i}.attn_output.weight": hf(attn.o_proj.weight),
            f"blk.{i}.ffn_norm.weight": hf(layer.post_attention_layernorm.weight),
            f"blk.{i}.ffn_gate.weight": hf(mlp.gate_proj.weight),
            f"blk.{i}.ffn_up.weight": hf(mlp.up_proj.weight),
            f"blk.{i}.ffn_down.weight": hf(mlp.down_proj.weight),
        })
    assert sorted(tensors) == sorted(want)
    for name, tensor in tensors.items():
        assert tensor.tensor_type == gguf.GGMLQuantizationType.F32, name
        # GGUF lists dimensions innermost first: [in, out] for a [out, in] Linear weight.
        assert list(tensor.shape) == list(reversed(want[name].shape)), name
        got = np.asarray(tensor.data).reshape(want[name].shape)
        if ".attn_q." in name or ".attn_k." in name:
            heads = shape.heads if ".attn_q." in name else shape.kv_heads
            assert not np.array_equal(got, want[name]), f"{name} was not reordered"
            got = rope_deinterleave(got, heads)
        np.testing.assert_array_equal(got, want[name], err_msg=name)


def test_the_vocabulary_is_the_trained_bpe_padded_to_the_model(exported: Exported) -> None:
    import gguf

    fields, _ = _fields(exported.gguf)
    trained = json.loads(exported.tokenizer.read_text())
    vocab = trained["model"]["vocab"]
    tokens, types = fields["tokenizer.ggml.tokens"], fields["tokenizer.ggml.token_type"]
    assert fields["tokenizer.ggml.model"] == "gpt2"
    assert len(tokens) == len(types) == 8192
    assert tokens[0] == "<s>" and tokens[1] == "</s>"
    assert types[0] == types[1] == gguf.TokenType.CONTROL
    assert fields["tokenizer.ggml.bos_token_id"] == 0
    assert fields["tokenizer.ggml.eos_token_id"] == 1
    for token, i in vocab.items():
        assert tokens[i] == token
        if i > 1:
            assert types[i] == gguf.TokenType.NORMAL
    first_pad = len(vocab)
    assert tokens[first_pad] == f"[PAD{first_pad}]" and tokens[-1] == "[PAD8191]"
    assert set(types[first_pad:]) == {gguf.TokenType.UNUSED}
    merges = [m if isinstance(m, str) else " ".join(m) for m in trained["model"]["merges"]]
    assert fields["tokenizer.ggml.merges"] == merges


def _rope(x: np.ndarray, positions: np.ndarray, pairs: str, base: float = 10000.0) -> np.ndarray:
    """Rotary positions on ``x`` [T, d]: ``half`` rotates dims (j, j + d/2) as transformers
    does; ``adjacent`` rotates (2j, 2j + 1) as llama.cpp's ``llama`` architecture does."""
    d = x.shape[-1]
    angles = positions[:, None] * base ** (-np.arange(0, d, 2) / d)[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    if pairs == "half":
        a, b = x[:, :d // 2], x[:, d // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
    a, b = x[:, 0::2], x[:, 1::2]
    out = np.empty_like(x)
    out[:, 0::2], out[:, 1::2] = a * cos - b * sin, b * cos + a * sin
    return out


def test_the_row_reordering_turns_rotate_half_into_adjacent_pairs() -> None:
    from benchlab.exporting.gguf_export import rope_deinterleave, rope_interleave

    rng = np.random.default_rng(0)
    heads, d, width, count = 3, 8, 12, 5
    wq, wk = rng.normal(size=(2, heads * d, width))
    x = rng.normal(size=(count, width))
    positions = np.arange(count, dtype=np.float64) + 7
    for w in (wq, wk):
        np.testing.assert_array_equal(rope_deinterleave(rope_interleave(w, heads), heads), w)
    for h in range(heads):
        rows = slice(h * d, (h + 1) * d)
        hf_q = _rope(x @ wq[rows].T, positions, "half")
        hf_k = _rope(x @ wk[rows].T, positions, "half")
        cpp_q = _rope(x @ rope_interleave(wq, heads)[rows].T, positions, "adjacent")
        cpp_k = _rope(x @ rope_interleave(wk, heads)[rows].T, positions, "adjacent")
        # The same attention scores: the head's dimensions are only listed in another order.
        np.testing.assert_allclose(cpp_q @ cpp_k.T, hf_q @ hf_k.T, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cpp_q[:, 0::2], hf_q[:, :d // 2], atol=1e-12)


# --- llama.cpp itself ------------------------------------------------------------------------

def _decoder(exported: Exported, path: Path | None = None, **options: Any) -> Any:
    pytest.importorskip("llama_cpp")
    from benchlab.frameworks.llamacpp.generative import LlamaCppDecoder

    config = RunnerConfig(backend=BACKEND, model_path=str(path or exported.gguf), threads=2,
                          generate=GENERATION, reference=str(exported.reference),
                          options=options)
    decoder = LlamaCppDecoder(config)
    decoder.load()
    return decoder


@pytest.fixture(scope="module")
def decoder(exported: Exported) -> Any:
    backend = _decoder(exported)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def reference(exported: Exported) -> Any:
    from benchlab.runner.generate import load_generative_reference

    return load_generative_reference(str(exported.reference))


@pytest.mark.llamacpp
def test_prefill_logits_match_the_transformers_reference(decoder: Any, reference: Any) -> None:
    decoder.reset()
    every = decoder.forward(reference.prompt, all_logits=True)
    assert every.shape == reference.logits.shape == (32, 8192)
    assert every.dtype == np.float32
    # fp32 weights, llama.cpp's f16 key/value cache (its default): measured 70.9 dB.
    assert sqnr(every, reference.logits) > 60
    decoder.reset()
    last = decoder.forward(reference.prompt)
    np.testing.assert_allclose(last, every[-1], rtol=0, atol=1e-4)


@pytest.mark.llamacpp
def test_an_f32_cache_is_closer_still(exported: Exported, reference: Any) -> None:
    backend = _decoder(exported, cache_type="f32")
    try:
        every = backend.forward(reference.prompt, all_logits=True)
        # fp32 throughout: measured 123.9 dB.
        assert sqnr(every, reference.logits) > 90
    finally:
        backend.close()


@pytest.mark.llamacpp
def test_greedy_tokens_are_the_references(decoder: Any, reference: Any) -> None:
    tokens, _ = greedy(decoder, reference.prompt, 32)
    assert tokens == reference.tokens[:32].tolist()


@pytest.mark.llamacpp
def test_reset_empties_the_cache(decoder: Any, reference: Any) -> None:
    first, first_logits = greedy(decoder, reference.prompt, 16)
    second, second_logits = greedy(decoder, reference.prompt, 16)
    assert first == second
    np.testing.assert_array_equal(np.stack(first_logits), np.stack(second_logits))
    # Without a reset the prompt goes after the 31 cached positions: other logits.
    after = decoder.forward(reference.prompt)
    assert not np.allclose(after, first_logits[0], atol=1e-2)


@pytest.mark.llamacpp
def test_a_batch_of_sequences_decodes_each_as_alone(exported: Exported, decoder: Any,
                                                    reference: Any) -> None:
    """Continuous batching: two prompts start together, a third joins two steps later and
    the first two finish while it runs on; each chooses the tokens it chooses alone."""
    many = _decoder(exported, parallel=3)
    try:
        assert many.info()["parallel"] == 3 and many.sequences() == 3
        prompts = [reference.prompt[:12], reference.prompt[5:21], reference.prompt[3:10]]
        alone = [greedy(decoder, prompt, 6)[0] for prompt in prompts]
        chosen: dict[int, list[int]] = {0: [], 1: [], 2: []}
        for sequence in chosen:
            many.reset_sequence(sequence)
        for step in range(8):
            feeds = [(s, np.array(chosen[s][-1:])) for s in (0, 1, 2)
                     if chosen[s] and len(chosen[s]) < 6]
            if step == 0:
                feeds = [(0, prompts[0]), (1, prompts[1])]
            if step == 2:
                feeds.append((2, prompts[2]))
            for (sequence, _), logits in zip(feeds, many.forward_batch(feeds), strict=True):
                chosen[sequence].append(int(np.argmax(logits)))
        assert [chosen[s] for s in (0, 1, 2)] == alone
        with pytest.raises(ValueError, match="n_batch"):
            many.forward_batch([(0, np.zeros(600, dtype=np.int64))])
    finally:
        many.close()


@pytest.mark.llamacpp
def test_a_prompt_longer_than_a_batch_is_decoded_in_batches(exported: Exported,
                                                           decoder: Any) -> None:
    small = _decoder(exported, n_batch=8)
    try:
        prompt = np.arange(2, 43, dtype=np.int64)
        small.reset()
        decoder.reset()
        np.testing.assert_allclose(small.forward(prompt), decoder.forward(prompt), atol=1e-3)
        small.reset()
        decoder.reset()
        np.testing.assert_allclose(small.forward(prompt, all_logits=True),
                                   decoder.forward(prompt, all_logits=True), atol=1e-3)
    finally:
        small.close()


@pytest.mark.llamacpp
def test_llama_cpp_tokenizes_as_the_trained_tokenizer(exported: Exported) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    from tokenizers import Tokenizer

    from benchlab.exporting.decoder import corpus_text

    text = corpus_text()[:4000]
    want = Tokenizer.from_file(str(exported.tokenizer)).encode(text).ids
    vocab = llama_cpp.Llama(str(exported.gguf), vocab_only=True, verbose=False)
    try:
        assert vocab.tokenize(text.encode(), add_bos=False, special=False) == want
        assert vocab.detokenize(want).decode() == text
    finally:
        vocab.close()


@pytest.mark.llamacpp
def test_the_backend_reports_what_it_ran(decoder: Any) -> None:
    import llama_cpp

    info = decoder.info()
    assert info[DetailKey.RUNTIME_VERSION] == llama_cpp.__version__
    assert info[DetailKey.PRECISION] == "fp32"
    assert info[DetailKey.THREADS] == 2 == info["threads_batch"]
    assert info["n_ctx"] >= 512  # the reference text is 512 tokens
    assert decoder.vocab_size() == 8192
    # A persistent ggml threadpool, as llama.cpp's own tools attach one.
    assert info["threadpool"] == "attached, 2 threads, poll 50"


@pytest.mark.llamacpp
def test_without_a_threadpool_the_logits_are_the_same(exported: Exported, decoder: Any,
                                                      reference: Any) -> None:
    plain = _decoder(exported, poll="none")
    try:
        assert plain.info()["threadpool"].startswith("none attached")
        decoder.reset()
        np.testing.assert_array_equal(plain.forward(reference.prompt),
                                      decoder.forward(reference.prompt))
    finally:
        plain.close()


@pytest.mark.llamacpp
@pytest.mark.slow
def test_the_runner_measures_llama_cpp_generations(exported: Exported) -> None:
    pytest.importorskip("llama_cpp")
    config = RunnerConfig(backend=BACKEND, model_path=str(exported.gguf), threads=2,
                          warmup=1, iterations=2, min_time=0.0,
                          generate={"prompt_tokens": 128, "new_tokens": 64},
                          reference=str(exported.reference))
    values, details = runner_values(config)
    assert len(values[Metric.TTFT]) == 2
    assert len(values[Metric.INTER_TOKEN_LATENCY]) == 2 * 63
    for k in range(2):
        assert values[Metric.LATENCY][k] == pytest.approx(
            values[Metric.TTFT][k] + 63 * values[Metric.TPOT][k], rel=1e-6)
    assert 50 < values[Metric.MODEL_SIZE][0] < 70  # 15.1M float32 weights: 57.9 MiB
    assert values[Metric.TOKEN_AGREEMENT] == [1.0]
    assert values[Metric.FIRST_DIVERGENCE] == [32]
    assert values[Metric.SQNR][0] > 60
    assert details[DetailKey.PRECISION] == "fp32"
    assert details["kv_cache"] == "llama.cpp in place, f16"


#: Each quantized file llama.cpp makes of llama_15m: its ``general.file_type``, the types of
#: an attention and a feed-forward-down weight, its bits per weight (embeddings and output
#: layer included) and the least prefill SQNR against the reference, with what was measured.
QUANTIZED = {
    # 8-bit: 33.7 dB, 8.51 bits per weight.
    "gguf_q8_0": (7, "Q8_0", "Q8_0", (8.4, 8.6), 30),
    # 4-bit blocks of 32 (output layer Q8_0): 12.5 dB, 5.34 bits per weight.
    "gguf_q4_0": (2, "Q4_0", "Q4_0", (5.2, 5.5), 10),
    # Q4_K_M on rows 384 long: llama.cpp falls back to Q5_0 where a row is not a multiple of
    # 256 (the feed-forward down projection, 1024 wide, is Q4_K): 17.7 dB, 6.17 bits.
    "gguf_q4_k_m": (15, "Q5_0", "Q4_K", (6.0, 6.3), 14),
}


@pytest.fixture(scope="module", params=sorted(QUANTIZED))
def quantized(request: pytest.FixtureRequest, exported: Exported) -> tuple[str, Path]:
    pytest.importorskip("llama_cpp")
    from benchlab.exporting.gguf_export import export_quantized

    return request.param, export_quantized(exported.ctx, request.param)[request.param]


@pytest.mark.llamacpp
def test_llama_cpp_quantizes_the_file(exported: Exported, quantized: tuple[str, Path],
                                      reference: Any) -> None:
    import gguf

    key, path = quantized
    file_type, attention, down, bits, least_sqnr = QUANTIZED[key]
    fields, tensors = _fields(path)
    assert fields["general.file_type"] == file_type
    assert tensors["blk.0.attn_q.weight"].tensor_type.name == attention
    assert tensors["blk.0.ffn_down.weight"].tensor_type.name == down
    assert tensors["blk.0.attn_norm.weight"].tensor_type == gguf.GGMLQuantizationType.F32
    backend = _decoder(exported, path)
    try:
        info = backend.info()
        assert info[DetailKey.PRECISION] == key.removeprefix("gguf_")
        assert bits[0] < info["bits_per_weight"] < bits[1]
        every = backend.forward(reference.prompt, all_logits=True)
        assert sqnr(every, reference.logits) > least_sqnr
    finally:
        backend.close()


@pytest.mark.llamacpp
@pytest.mark.slow
def test_the_adapters_runner_command_loads_neither_the_harness_nor_torch(
        exported: Exported, tmp_path: Path) -> None:
    """The adapter's own command, run as it is: a fresh runner process on the GGUF file."""
    pytest.importorskip("llama_cpp")
    from .runner_imports import _OBSERVER

    model = _generator({"gguf": "m.gguf", "reference": "m.ref.npz"})
    ctx = job_context(model, FrameworkConfig("llamacpp", {}), workdir=str(tmp_path),
                      files={"files.gguf": str(exported.gguf),
                             "files.reference": str(exported.reference)},
                      generate=_generation(), iter=2, warmup=0, threads=2)
    (invocation,) = LlamaCppFramework().invocations(ctx)
    (tmp_path / "sitecustomize.py").write_text(_OBSERVER)
    modules = tmp_path / "modules.json"
    env = {**os.environ, **invocation.env, "PYTHONPATH": str(tmp_path),
           "BENCHLAB_TEST_MODULES_OUT": str(modules)}
    proc = subprocess.run(list(invocation.argv), capture_output=True, text=True, timeout=300,
                          env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = set(json.loads(modules.read_text()))
    assert "benchlab.frameworks.llamacpp.generative" in loaded
    assert not {"benchlab.frameworks.llamacpp.adapter", "benchlab.frameworks.base",
                "torch", "transformers", "gguf"} & loaded
    parsed = parse_output(proc.stdout)
    metrics = {s.metric for s in parsed.samples}
    assert {Metric.TTFT, Metric.TPOT, Metric.TOKEN_AGREEMENT} <= metrics
    assert parsed.details[DetailKey.PRECISION] == "fp32"


@pytest.mark.llamacpp
@pytest.mark.slow
def test_benchlab_runs_llama_15m_on_llama_cpp(tmp_path: Path, llama_15m_export: Any) -> None:
    """The whole path: the zoo exports the GGUF files, the harness runs llamacpp's runner on
    each precision."""
    pytest.importorskip("llama_cpp")
    import benchlab
    from benchlab.plugins import FRAMEWORK_GROUP, available_names
    from benchlab.schema.result import Status
    from benchlab.exporting.formats import FORMATS

    if "llamacpp" not in available_names(FRAMEWORK_GROUP) or "gguf" not in FORMATS:
        pytest.skip("llamacpp is not registered (pyproject entry point, zoo format gguf)")
    overrides = benchlab.TestOverrides(iter=2, min_time=0.0, repeat=1, warmup=0)
    results = benchlab.run(models=["llama_15m"], frameworks=["llamacpp"],
                           db=tmp_path / "results.db", cache_dir=llama_15m_export.cache_dir,
                           overrides=overrides)
    by_precision = {r.details.get(DetailKey.PRECISION): r for r in results}
    assert sorted(by_precision) == ["fp32", "q4_0", "q4_k_m", "q8_0"], [
        (r.status, r.error) for r in results]
    for precision, result in by_precision.items():
        assert result.status is Status.OK, (result.error, result.stderr_tail)
        assert result.summaries[Metric.TTFT.key].count == 2
        assert result.summaries[Metric.INTER_TOKEN_LATENCY.key].count == 2 * 63
    fp32, q8_0 = by_precision["fp32"], by_precision["q8_0"]
    assert fp32.summaries[Metric.TOKEN_AGREEMENT.key].mean == 1.0
    assert fp32.summaries[Metric.FIRST_DIVERGENCE.key].mean == 32
    assert fp32.summaries[Metric.SQNR.key].mean > 60
    assert 50 < fp32.summaries[Metric.MODEL_SIZE.key].mean < 70
    assert 12 < q8_0.summaries[Metric.MODEL_SIZE.key].mean < 20  # 8.5 bits per weight
    assert q8_0.summaries[Metric.SQNR.key].mean > 30
    q4_0, q4_k_m = by_precision["q4_0"], by_precision["q4_k_m"]
    assert 8 < q4_0.summaries[Metric.MODEL_SIZE.key].mean < q4_k_m.summaries[
        Metric.MODEL_SIZE.key].mean < 12.5
    # The trade a 4-bit file makes, beside its speed: less agreement with the reference's
    # tokens and logits further from them than 8-bit's. (Perplexity is measured too, but on
    # the zoo's seeded, untrained weights it is in the millions for every precision and says
    # nothing about quantization: docs/generative.md.)
    for four_bit in (q4_0, q4_k_m):
        assert four_bit.summaries[Metric.TOKEN_AGREEMENT.key].mean < 1.0
        assert Metric.PERPLEXITY.key in four_bit.summaries
        assert 10 < four_bit.summaries[Metric.SQNR.key].mean < q8_0.summaries[
            Metric.SQNR.key].mean
