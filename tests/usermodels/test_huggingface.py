"""Hugging Face folders saved in the test (seeded configs from ``transformers``, read offline): a
tiny BERT classifier runs as a forward pass with accuracy, a tiny Llama generates with TTFT and
TPOT on ONNX Runtime and llama.cpp; the GGUF file its export wrote runs on llama.cpp given as a
file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tiny_models import run_export_script

import benchlab
from benchlab.schema.generation import generation_grid
from benchlab.report.matrix import matrix_cells
from benchlab.schema.result import Metric, Status, metric_key

pytestmark = pytest.mark.slow

SAVE = """
import sys
import torch
from transformers import BertConfig, BertForSequenceClassification, LlamaConfig, LlamaForCausalLM

out = sys.argv[1]
torch.manual_seed(0)
BertForSequenceClassification(BertConfig(
    vocab_size=500, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
    intermediate_size=64, max_position_embeddings=64, num_labels=3)).eval().save_pretrained(
    f"{out}/tiny-bert")
LlamaForCausalLM(LlamaConfig(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
    tie_word_embeddings=False)).eval().save_pretrained(f"{out}/tiny-llama")
"""
QUICK = benchlab.TestOverrides(iter=2, warmup=1, repeat=1, min_time=0)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hf")
    run_export_script(SAVE, out)
    return out


def test_a_bert_folder_and_a_llama_folder_run_with_accuracy_and_generation(
        folders: Path, tmp_path: Path) -> None:
    results = benchlab.run(model=[str(folders / "tiny-bert"), str(folders / "tiny-llama")],
                           # PyTorch eager only: the folder's TorchScript and torch.export
                           # files are tests/usermodels/test_pytorch_model.py's proof.
                           frameworks=["pytorch:mode=eager", "onnxruntime", "llamacpp",
                                       "ortgenai", "ovgenai:precision=int4"],
                           generations=generation_grid((16,), 8, ()), overrides=QUICK,
                           db=tmp_path / "r.db", cache_dir=folders / "cache")
    failed = [(r.identity.label, r.error) for r in results if r.status is not Status.OK]
    assert not failed, failed
    bert = {c.label: c for c in matrix_cells(results) if c.model == "tiny-bert"}
    assert {"pytorch[eager]", "onnxruntime", "onnxruntime[int8]"} <= set(bert)
    assert bert["onnxruntime"].sqnr > 90 and bert["onnxruntime"].top1 == 1.0  # a classifier
    llama = {r.identity.framework + str(r.identity.framework_config.get("precision", ""))
             : r for r in results if r.identity.model_name == "tiny-llama"}
    # GenAI's builder made its models from the user's folder too (fp32 and int4), and so
    # did the stateful OpenVINO export with NNCF's int4 (its 64-wide rows take groups of 64:
    # NNCF's group of 128 does not divide them).
    assert {"ortgenai", "ortgenaiint4", "ovgenaiint4"} <= set(llama)
    for name in ("onnxruntime", "llamacpp", "ortgenai", "ortgenaiint4", "ovgenaiint4"):
        summaries = llama[name].summaries
        assert summaries[metric_key("NET", Metric.TTFT)].p50 > 0, name
        assert summaries[metric_key("NET", Metric.TPOT)].p50 > 0, name
    # llama.cpp and GenAI at fp32 follow the eager model's greedy tokens (teacher-forced
    # agreement).
    for name in ("llamacpp", "ortgenai"):
        agreement = llama[name].summaries[metric_key("NET", Metric.TOKEN_AGREEMENT)]
        assert agreement.p50 > 0.9, name


def test_the_gguf_file_written_for_the_llama_runs_given_as_a_file(folders: Path,
                                                                  tmp_path: Path) -> None:
    # Planning exports (a cache hit after the test above) and measures nothing.
    benchlab.plan_sweep(model=str(folders / "tiny-llama"), frameworks=["llamacpp"],
                        generations=generation_grid((16,), 8, ()), overrides=QUICK,
                        cache_dir=folders / "cache")
    written = sorted((folders / "cache").rglob("tiny-llama.gguf"))
    assert written, "the export wrote no GGUF file"
    gguf = shutil.copy(written[0], tmp_path / "tiny.gguf")
    # No frameworks named: the file's own runtime runs it, and nothing else is "skipped".
    results = benchlab.run(model=str(gguf), generations=generation_grid((16,), 8, ()),
                           overrides=QUICK, db=tmp_path / "r.db", cache_dir=tmp_path / "cache")
    (result,) = results
    assert not results.skipped, results.skipped
    assert result.status is Status.OK, result.error
    assert result.identity.model_name == "tiny"
    assert result.summaries[metric_key("NET", Metric.TPOT)].p50 > 0
