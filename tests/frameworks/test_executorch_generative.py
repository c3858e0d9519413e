"""ExecuTorch as a generative runtime: llama_15m's ``decoder_pte`` program (its key/value cache
inside, as mutable buffers) on :class:`benchlab.frameworks.executorch.generative.ExecuTorchDecoder`,
against the ``transformers`` reference that the zoo's export writes.

The program comes from the session's export of llama_15m (``llama_15m_export`` in
tests/conftest.py, the zoo's own export process), and the backend then runs here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from benchlab.runner.config import RunnerConfig
from benchlab.runner.generate import GenerativeReference, load_generative_reference

from .decoding import greedy, runner_values, sqnr

if TYPE_CHECKING:
    from benchlab.frameworks.executorch.generative import ExecuTorchDecoder

pytestmark = pytest.mark.slow

BACKEND = "benchlab.frameworks.executorch.generative:ExecuTorchDecoder"


@dataclass(frozen=True)
class Exported:
    program: Path
    reference: Path


@pytest.fixture(scope="module")
def exported(llama_15m_export: Any) -> Exported:
    """llama_15m's decoder program and reference, from the session's export (made in the
    zoo's export process, so this one never loads ExecuTorch's compiler stack)."""
    files = llama_15m_export.files
    return Exported(files["decoder_pte"], files["reference"])


def _backend(exported: Exported, threads: int | None = None) -> ExecuTorchDecoder:
    from benchlab.frameworks.executorch.generative import ExecuTorchDecoder

    backend = ExecuTorchDecoder(RunnerConfig(backend=BACKEND, model_path=str(exported.program),
                                             threads=threads))
    backend.load()
    return backend


def _reference(exported: Exported) -> GenerativeReference:
    return load_generative_reference(str(exported.reference))


def test_the_program_knows_its_vocabulary_and_cache(exported: Exported) -> None:
    backend = _backend(exported)
    assert backend.vocab_size() == 8192
    info = backend.info()
    assert info["delegate"] == "xnnpack" and info["precision"] == "fp32"
    assert "2048 positions" in info["kv_cache"] and info["max_seq_len"] == 512
    assert info["runtime_version"]


def test_prefill_logits_match_the_eager_model(exported: Exported) -> None:
    reference = _reference(exported)
    backend = _backend(exported)
    logits = backend.forward(reference.prompt, all_logits=True)
    assert logits.shape == reference.logits.shape
    found = sqnr(logits, reference.logits)
    print(f"\nprefill SQNR against transformers: {found:.1f} dB, max |error| "
          f"{np.max(np.abs(logits - reference.logits)):.2e}")
    assert found > 60
    # The last position alone (what generation asks for) is the same row.
    backend.reset()
    last = backend.forward(reference.prompt)
    np.testing.assert_array_equal(last, logits[-1])


def test_greedy_decoding_gives_the_reference_tokens(exported: Exported) -> None:
    reference = _reference(exported)
    tokens, _ = greedy(_backend(exported), reference.prompt, len(reference.tokens))
    agreement = float(np.mean(np.array(tokens) == reference.tokens))
    print(f"\ngreedy agreement over {len(tokens)} tokens: {agreement:.3f}")
    assert tokens == reference.tokens.tolist()


def test_reset_forgets_the_cache(exported: Exported) -> None:
    reference = _reference(exported)
    backend = _backend(exported)
    first_tokens, first = greedy(backend, reference.prompt, 16)
    second_tokens, second = greedy(backend, reference.prompt, 16)
    assert first_tokens == second_tokens
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    # Entries beyond the position are never read: after a longer generation of other tokens,
    # a short one gives what a freshly loaded program gives, bit for bit.
    rng = np.random.default_rng(3)
    backend.reset()
    backend.forward(rng.integers(2, 8192, size=200, dtype=np.int64))
    greedy(backend, rng.integers(2, 8192, size=40, dtype=np.int64), 8)
    _, stale = greedy(backend, reference.prompt[:8], 8)
    _, fresh = greedy(_backend(exported), reference.prompt[:8], 8)
    for a, b in zip(stale, fresh, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_prompt_split_over_calls_gives_the_same_logits(exported: Exported) -> None:
    reference = _reference(exported)
    backend = _backend(exported)
    whole = backend.forward(reference.prompt, all_logits=True)
    backend.reset()
    parts = [backend.forward(reference.prompt[:20], all_logits=True),
             backend.forward(reference.prompt[20:31], all_logits=True),
             backend.forward(reference.prompt[31:], all_logits=True)]
    np.testing.assert_allclose(np.concatenate(parts), whole, rtol=0, atol=1e-4)
    assert backend.cached_positions() == len(reference.prompt)


def test_more_tokens_than_one_call_takes_run_in_chunks(exported: Exported) -> None:
    import torch

    from benchlab.frameworks.pytorch.backend import build_from_entry

    tokens = np.random.default_rng(5).integers(2, 8192, size=700, dtype=np.int64)
    with torch.inference_mode():
        model = build_from_entry("benchlab.zoo.archs.llama:llama_15m")
        want = model(torch.from_numpy(tokens)[None, :]).logits[0].numpy()
    backend = _backend(exported)
    got = backend.forward(tokens, all_logits=True)  # 512 + 188
    assert got.shape == want.shape
    assert sqnr(got, want) > 60
    backend.reset()
    np.testing.assert_array_equal(backend.forward(tokens), got[-1])


def test_more_positions_than_the_cache_holds_is_an_error(exported: Exported) -> None:
    backend = _backend(exported)
    backend.forward(np.full(2040, 5, dtype=np.int64))
    with pytest.raises(ValueError, match="2048 positions"):
        backend.forward(np.full(9, 5, dtype=np.int64))
    backend.forward(np.full(8, 5, dtype=np.int64))  # exactly full
    backend.reset()
    assert backend.forward(np.full(3, 5, dtype=np.int64)).shape == (8192,)


def test_the_generative_runner_measures_it(exported: Exported) -> None:
    config = RunnerConfig(backend=BACKEND, model_path=str(exported.program),
                          generate={"prompt_tokens": 16, "new_tokens": 4},
                          reference=str(exported.reference), iterations=2, warmup=0,
                          min_time=0.0, threads=2)
    values, details = runner_values(config)
    print(f"\nttft {np.mean(values['ttft']):.2f} ms, tpot {np.mean(values['tpot']):.2f} ms, "
          f"token_agreement {values['token_agreement'][0]}, sqnr {values['sqnr'][0]:.1f} dB, "
          f"first_divergence {values['first_divergence'][0]}")
    assert len(values["ttft"]) == 2 and len(values["inter_token_latency"]) == 2 * 3
    assert values["token_agreement"] == [1.0]
    assert values["first_divergence"] == [32.0]
    assert values["sqnr"][0] > 60
    assert values["model_size"][0] > 50  # 15.1M float32 weights in the file
    assert details["delegate"] == "xnnpack"
    assert details["threads"] == 2


def test_the_8da4w_program_is_four_bit_and_says_what_it_costs(llama_15m_export: Any) -> None:
    """ExecuTorch's Llama export's 8da4w: int4 weights in groups of 32, int8 activations per
    token, on XNNPACK. Measured on llama_15m: 18.5 MiB (the 12 MiB embedding stays fp32),
    SQNR 10.7 dB against the reference (llama.cpp's Q4_0, also groups of 32: 12.5)."""
    files = llama_15m_export.files
    program = Path(files["decoder_pte_8da4w"])
    assert program.stat().st_size < 0.4 * Path(files["decoder_pte"]).stat().st_size
    config = RunnerConfig(backend=BACKEND, model_path=str(program),
                          generate={"prompt_tokens": 16, "new_tokens": 4},
                          reference=str(files["reference"]), iterations=2, warmup=0,
                          min_time=0.0, threads=2, options={"precision": "8da4w"})
    values, details = runner_values(config)
    assert details["precision"] == "8da4w" and details["delegate"] == "xnnpack"
    assert 6 < values["sqnr"][0] < 25
    assert 0.2 <= values["token_agreement"][0] < 1.0
    assert len(values["inter_token_latency"]) == 2 * 3
