"""One JSON file per result, FAI-PEP's local reporter made atomic and schema-versioned.

Layout: ``<dir>/<run>/<model>/<framework>/<test>/<job key>.json``. Each file is the complete
result (identity, environment, raw samples, summaries) with its ``schema_version``; it is
written to a temporary file and renamed, so a reader never sees half a result.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from benchlab.schema.result import Result

__all__ = ["write_result_json"]


def _safe(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", part).strip("_") or "_"


def write_result_json(directory: Path, run_label: str, result: Result) -> Path:
    """Write ``result`` under ``directory`` and return the file's path."""
    identity = result.identity
    folder = (
        Path(directory)
        / _safe(run_label)
        / _safe(identity.model_name)
        / _safe(identity.framework)
        / _safe(identity.test_identifier)
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{identity.key}.json"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as handle:
        json.dump(result.to_dict(), handle, indent=1, default=str)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path
