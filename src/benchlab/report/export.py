"""CSV and Parquet export of results (pandas, and pyarrow for Parquet, imported on use)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlab.errors import UsageError
from benchlab.schema.result import DetailKey, EnvKey, Result

__all__ = ["export_results", "samples_rows", "summary_rows"]


def summary_rows(results: Sequence[Result]) -> list[dict[str, Any]]:
    """One row per result × metric key, with the summary statistics as columns."""
    rows: list[dict[str, Any]] = []
    for result in results:
        ident = result.identity
        base = {
            "job_key": ident.key,
            "model": ident.model_name,
            "test": ident.test_identifier,
            "framework": ident.framework,
            "config": ",".join(f"{k}={v}" for k, v in sorted(ident.framework_config.items())),
            "target": ident.target,
            "device": ident.device,
            "variant": ident.variant,
            "status": result.status.value,
            "error": result.error,
            "started_at": result.started_at,
            # The user's labels of the run (schema/labels.py), to find its rows by.
            "user_identifier": result.details.get(DetailKey.USER_IDENTIFIER),
            "platform": result.environment.get(EnvKey.PLATFORM),
        }
        if not result.summaries:
            rows.append({**base, "metric_key": None})
        for key, summary in result.summaries.items():
            stats = summary.to_dict()
            stats["warnings"] = "; ".join(summary.warnings)
            extra = stats.pop("percentiles")
            rows.append({**base, "metric_key": key, **stats, **extra})
    return rows


def samples_rows(results: Sequence[Result]) -> list[dict[str, Any]]:
    """One row per raw sample, with the job's identity."""
    rows: list[dict[str, Any]] = []
    for result in results:
        ident = result.identity
        for s in result.samples:
            rows.append({
                "job_key": ident.key, "model": ident.model_name, "test": ident.test_identifier,
                "framework": ident.framework, "status": result.status.value, "type": s.type,
                "metric": s.metric, "unit": s.unit, "repetition": s.repetition,
                "index": s.index, "value": s.value,
            })
    return rows


def export_results(
    results: Sequence[Result], path: Path, *, fmt: str | None = None, samples: bool = False
) -> Path:
    """Write summaries (or raw ``samples``) to ``path`` as CSV or Parquet (by suffix or ``fmt``)."""
    import pandas as pd

    fmt = (fmt or Path(path).suffix.lstrip(".") or "csv").lower()
    frame = pd.DataFrame(samples_rows(results) if samples else summary_rows(results))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "parquet":
        try:
            frame.to_parquet(path, index=False)
        except ImportError as exc:
            raise UsageError(f"Parquet export needs pyarrow: {exc}") from exc
    else:
        raise UsageError(f"unknown export format {fmt!r}: use csv or parquet")
    return path
