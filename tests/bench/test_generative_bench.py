"""bench/generative.py runs in smoke mode and writes well-formed figures (never a timing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bounded import run_bounded

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_generative_bench_smoke_writes_its_figures(tmp_path: Path,
                                                   llama_15m_export: Any) -> None:
    out = tmp_path / "generative.json"
    proc = run_bounded([sys.executable, str(BENCH / "generative.py"), "--smoke", "--repeats",
                        "1", "--out", str(out), "--cache-dir", str(llama_15m_export.cache_dir)],
                       limit_s=540, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["smoke"] is True
    cost = record["figures"]["overhead"]
    for key in ("loop_us_per_token", "tpot_ms", "share_of_tpot"):
        assert set(cost[key]) == {"min", "median", "max"}
        assert cost[key]["min"] > 0
    assert cost["share_of_tpot"]["max"] < 1  # the loop's cost is a part of each token's time
    (cell,) = record["figures"]["cells"]
    assert (cell["model"], cell["framework"], cell["status"]) == ("llama_15m", "onnxruntime", "ok")
    assert cell["decode_tokens_per_s"] > 0 and cell["token_agreement"] == 1.0
