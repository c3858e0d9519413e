"""One JSON file per result, FAI-PEP's local reporter made atomic and schema-versioned.

Layout (``run --json-dir``, FAI-PEP's ``--local_reporter``):
``<dir>/<run>/<model>/<framework>/<test>/<job key>.json``, every run kept.

Flat layout (``run --simple-json-dir``, FAI-PEP's ``--simple_local_reporter``, "the directory
hierarchy is reduced"): ``<dir>/<model>.<test>.<framework>.<job key>.json``, one folder, no
run level. As FAI-PEP's simple reporter removes its ``<dir>/<identifier>/`` before writing
``data.txt`` there, a job's file is replaced by the next run of the same job: the folder holds
the latest result of each job.

Each file is the complete result (identity, environment, raw samples, summaries) with its
``schema_version``; it is written to a temporary file and renamed, so a reader never sees half
a result.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from benchlab.schema.result import Result

__all__ = ["simple_result_name", "write_result_json", "write_simple_result_json"]


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
    return _write_atomically(folder / f"{identity.key}.json", result)


def simple_result_name(result: Result) -> str:
    """The file name of ``result`` in the flat layout: ``<model>.<test>.<framework>.<key>.json``."""
    identity = result.identity
    parts = (identity.model_name, identity.test_identifier, identity.framework, identity.key)
    return ".".join(_safe(part) for part in parts) + ".json"


def write_simple_result_json(directory: Path, result: Result) -> Path:
    """Write ``result`` into ``directory`` itself (the flat layout), replacing the file an
    earlier run wrote for the same job; return the file's path."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    return _write_atomically(folder / simple_result_name(result), result)


def _write_atomically(path: Path, result: Result) -> Path:
    folder = path.parent
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as handle:
        json.dump(result.to_dict(), handle, indent=1, default=str)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path
