"""The zoo's text generators on the real runtimes: llama_15m exported once, then measured by
``benchlab.run`` on PyTorch eager (``transformers``), ONNX Runtime, OpenVINO, ExecuTorch,
ONNX Runtime GenAI (a model its own builder made) and OpenVINO GenAI (a stateful model)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import benchlab
from benchlab.report.generation import generation_rows
from benchlab.schema.result import DetailKey, Metric, Result, Status

RUNTIMES = ("pytorch", "onnxruntime", "openvino", "executorch", "ortgenai", "ovgenai")


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory,
             llama_15m_export: Any) -> dict[tuple[str, str], Result]:
    """(framework, precision) → llama_15m's default generative test, one process of two
    generations: ONNX Runtime's defaults (fp32 and int8), OpenVINO in fp32,
    ONNX Runtime GenAI's (fp32 and int4), OpenVINO GenAI's (fp32, int8 and int4) and
    ExecuTorch's (fp32 and 8da4w)."""
    root = tmp_path_factory.mktemp("generative")
    overrides = benchlab.TestOverrides(iter=2, min_time=0.0, repeat=1, warmup=0)
    results = benchlab.run(models=["llama_15m"],
                           frameworks=["pytorch", "onnxruntime", "openvino:precision=fp32",
                                       "executorch", "ortgenai", "ovgenai"],
                           db=root / "results.db", cache_dir=llama_15m_export.cache_dir,
                           overrides=overrides)
    return {(r.identity.framework, str(r.details.get(DetailKey.PRECISION))): r for r in results}


@pytest.fixture(scope="module")
def generated(measured: dict[tuple[str, str], Result]) -> dict[str, Result]:
    """framework → its fp32 result."""
    return {framework: result for (framework, precision), result in measured.items()
            if precision == "fp32"}


def _mean(result: Result, metric: Metric) -> float:
    return result.summaries[metric.key].mean


@pytest.mark.slow
@pytest.mark.parametrize("framework", RUNTIMES)
def test_every_runtime_generates_and_reports_the_generation_metrics(
        generated: dict[str, Result], framework: str) -> None:
    assert sorted(generated) == sorted(RUNTIMES)
    result = generated[framework]
    assert result.status is Status.OK, (result.error, result.stderr_tail)
    assert result.details[DetailKey.GENERATION]["prompt_tokens"] == 128
    assert result.details[DetailKey.GENERATION]["new_tokens"] == 64
    assert result.summaries[Metric.TTFT.key].count == 2
    assert result.summaries[Metric.INTER_TOKEN_LATENCY.key].count == 2 * 63
    ttft, tpot = _mean(result, Metric.TTFT), _mean(result, Metric.TPOT)
    assert 0 < ttft < _mean(result, Metric.LATENCY)
    assert _mean(result, Metric.LATENCY) == pytest.approx(ttft + 63 * tpot, rel=1e-6)
    assert _mean(result, Metric.MEMORY_PEAK) > 0
    assert 50 < _mean(result, Metric.MODEL_SIZE) < 70  # 15.1M float32 weights: 57.8 MiB
    # The same model on every runtime: the reference's greedy text, token for token.
    assert _mean(result, Metric.TOKEN_AGREEMENT) == 1.0
    assert _mean(result, Metric.FIRST_DIVERGENCE) == 32
    if framework != "pytorch":  # pytorch is the reference: its error is exactly zero
        assert _mean(result, Metric.SQNR) > 80


@pytest.mark.slow
def test_perplexity_is_one_number_across_faithful_runtimes(
        generated: dict[str, Result]) -> None:
    values = [_mean(generated[f], Metric.PERPLEXITY) for f in RUNTIMES]
    assert np.allclose(values, values[0], rtol=1e-3), values


@pytest.mark.slow
def test_the_generation_table_has_a_row_per_runtime(generated: dict[str, Result]) -> None:
    rows = {row.framework: row for row in generation_rows(list(generated.values()))}
    assert sorted(rows) == sorted(RUNTIMES)
    for framework, row in rows.items():
        assert row.workload == "p128 g64 d0"
        # Each generation's decode rate is 1000 / its TPOT; the row's p50s are over the
        # generations, so the rate lies within the range those TPOTs give (a single slow
        # generation on a busy machine moves the two medians apart, not outside it).
        rates = [1e3 / tpot for tpot in generated[framework].samples_of(Metric.TPOT.key)]
        assert min(rates) * 0.999 <= row.decode_rate <= max(rates) * 1.001
        assert row.token_agreement == 1.0


def test_the_decoders_have_the_sizes_they_are_named_for() -> None:
    from benchlab.zoo.archs.llama import llama_15m

    params = sum(p.numel() for p in llama_15m().parameters())
    assert 14e6 < params < 16e6


def test_the_tokenizer_is_trained_the_same_every_time() -> None:
    from benchlab.exporting.decoder import corpus_text, train_tokenizer

    first, second = train_tokenizer(), train_tokenizer()
    assert first.to_str() == second.to_str()
    ids = first.encode(corpus_text()).ids
    assert first.decode(ids) == corpus_text()


@pytest.mark.slow
def test_int8_is_smaller_and_faithful_enough_and_says_how_far_it_parts(
        measured: dict[tuple[str, str], Result]) -> None:
    assert sorted(measured) == sorted([("pytorch", "fp32"), ("onnxruntime", "fp32"),
                                       ("onnxruntime", "int8"), ("openvino", "fp32"),
                                       ("executorch", "fp32"), ("executorch", "8da4w"),
                                       ("ortgenai", "fp32"),
                                       ("ortgenai", "int4"), ("ovgenai", "fp32"),
                                       ("ovgenai", "int8"), ("ovgenai", "int4")])
    int8, fp32 = measured["onnxruntime", "int8"], measured["onnxruntime", "fp32"]
    assert int8.status is Status.OK, (int8.error, int8.stderr_tail)
    # int8 matrix products: well under half the fp32 file (the embedding stays fp32).
    assert _mean(int8, Metric.MODEL_SIZE) < 0.5 * _mean(fp32, Metric.MODEL_SIZE)
    # Less exact than fp32, yet the same model: most greedy choices agree (measured 97%).
    assert 20 < _mean(int8, Metric.SQNR) < _mean(fp32, Metric.SQNR)
    assert 0.8 <= _mean(int8, Metric.TOKEN_AGREEMENT) <= 1.0
    assert 0 <= _mean(int8, Metric.FIRST_DIVERGENCE) <= 32



@pytest.mark.slow
def test_genai_int4_is_a_quarter_of_the_file_and_says_what_it_costs(
        measured: dict[tuple[str, str], Result]) -> None:
    """The builder's int4 (MatMulNBits, blocks of 32): measured 19.7 MiB against 58.3, SQNR
    12.5 dB, agreement 60-70% on the seeded weights."""
    int4, fp32 = measured["ortgenai", "int4"], measured["ortgenai", "fp32"]
    assert int4.status is Status.OK, (int4.error, int4.stderr_tail)
    assert int4.details[DetailKey.PRECISION] == "int4"
    # The embedding table stays fp32 (12 MiB of it): the rest shrinks eightfold.
    assert _mean(int4, Metric.MODEL_SIZE) < 0.4 * _mean(fp32, Metric.MODEL_SIZE)
    assert 8 < _mean(int4, Metric.SQNR) < 30
    assert 0.3 <= _mean(int4, Metric.TOKEN_AGREEMENT) < 1.0
    # Time to first token and per token measured as for every other runtime.
    assert int4.summaries[Metric.INTER_TOKEN_LATENCY.key].count == 2 * 63


@pytest.mark.slow
def test_openvino_genai_int8_and_int4_say_what_they_cost(
        measured: dict[tuple[str, str], Result]) -> None:
    """NNCF's weights: int8 per channel, int4 in groups of 128 (the embedding table and the
    output layer at int8)."""
    fp32 = measured["ovgenai", "fp32"]
    int8, int4 = measured["ovgenai", "int8"], measured["ovgenai", "int4"]
    for result in (int8, int4):
        assert result.status is Status.OK, (result.error, result.stderr_tail)
        assert result.summaries[Metric.INTER_TOKEN_LATENCY.key].count == 2 * 63
    assert _mean(int4, Metric.MODEL_SIZE) < _mean(int8, Metric.MODEL_SIZE) < (
        0.3 * _mean(fp32, Metric.MODEL_SIZE))
    assert _mean(int4, Metric.SQNR) < _mean(int8, Metric.SQNR) < _mean(fp32, Metric.SQNR)
    assert 0.8 <= _mean(int8, Metric.TOKEN_AGREEMENT) <= 1.0
    assert 0.2 <= _mean(int4, Metric.TOKEN_AGREEMENT) < 1.0
