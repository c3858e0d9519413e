"""bench/genai_fidelity.py (both GenAI libraries) and bench/llm_server.py run in smoke mode and write well-formed
figures (never a timing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bounded import run_bounded

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _smoke(script: str, out: Path, cache: Path, *more: str) -> dict[str, Any]:
    proc = run_bounded([sys.executable, str(BENCH / script), "--smoke", "--out", str(out),
                        "--cache-dir", str(cache), *more], limit_s=540, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["smoke"] is True
    return record["figures"]


@pytest.mark.slow
@pytest.mark.parametrize("library, precision", [("ortgenai", "int4"), ("ovgenai", "int4")])
def test_genai_fidelity_smoke_compares_both_sides_each_round(
        tmp_path: Path, llama_15m_export: Any, library: str, precision: str) -> None:
    figures = _smoke("genai_fidelity.py", tmp_path / "f.json", llama_15m_export.cache_dir,
                     "--library", library, "--precision", precision)
    assert (figures["library"], figures["precision"]) == (library, precision)
    assert figures["loop"] == "library" and len(figures["per_round"]) == 2
    for row in figures["per_round"]:
        assert row["benchlab_tpot_ms"] > 0 and row["tool_tpot_ms"] > 0
        assert row["benchlab_ttft_ms"] > 0 and row["tool_ttft_ms"] > 0
    for key in ("decode_ratio", "ttft_ratio"):
        assert figures[key]["low"] <= figures[key]["ratio"] <= figures[key]["high"]
    if library == "ovgenai":
        delay = figures["streamer_delay"]
        assert delay["first_token_late_ms"] >= 0 and delay["later_tokens_late_ms"] >= 0
        assert delay["ttft_ms"] > 0


@pytest.mark.slow
def test_llm_server_smoke_runs_a_token_bounded_server(tmp_path: Path,
                                                      llama_15m_export: Any) -> None:
    figures = _smoke("llm_server.py", tmp_path / "s.json", llama_15m_export.cache_dir)
    (cell,) = figures["cells"]
    assert cell["status"] == "ok", cell["error"]
    assert len(cell["runs"]) == 1 and cell["runs"][0]["target_qps"] == 20
    assert cell["ttft_p99_ms"] > 0 and cell["tokens_per_s"] > 0
    # ONNX Runtime's generative server path: every query's own times are samples of the
    # generation metrics (the search itself is tests/runner/test_generative_scenario.py's).
    assert cell["ttft_count"] == cell["queries_run"] >= 50
