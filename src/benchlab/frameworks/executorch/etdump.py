"""Per-operator times from an ETDump, read on the host with ExecuTorch's own schema.

An ETDump is the event tracer's record of a program's executions: a size-prefixed
flatbuffer (``devtools/etdump/etdump_schema_flatcc.fbs``), one ``run_data`` block per
``Method::load_method`` (named ``Default``) and per execution (``Execute``), each a list of
profile events with start and end times (nanoseconds on Linux). Operator calls of the
portable and optimized kernels are ``native_call_<op>`` events; a delegate's own events carry
their name in ``delegate_debug_id_str`` (XNNPACK: ``Fully Connected (NC, F32) GEMM #1``) and
``DELEGATE_CALL`` is the whole call into the delegate.

ExecuTorch's ``Inspector`` reads the same file, but importing it imports ExecuTorch's export
stack (torch, torchao): about 7 CPU seconds per process on the project's VMs, for a file that
ExecuTorch's own ``flatc`` and schema, which the installed ``executorch`` package ships, turn
into JSON in milliseconds. So this module runs that ``flatc`` on the file, without importing
ExecuTorch, and turns the events into rows in the shape a host run's ``profile_ops`` gives:
one ``{operator: ms}`` per timed execution.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["etdump_events", "etdump_operator_rows"]

_SCHEMAS = ("etdump_schema_flatcc.fbs", "scalar_type.fbs")
#: Events that frame others rather than being an operator (the method, an operator call
#: around its ``native_call_*``).
_FRAMES = frozenset({"Method::execute", "OPERATOR_CALL"})


def _executorch_folder() -> Path:
    spec = importlib.util.find_spec("executorch")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("reading an ETDump needs the executorch package (its flatc and "
                         "ETDump schema) on the host")
    return Path(next(iter(spec.submodule_search_locations)))


def etdump_events(path: Path) -> list[dict[str, Any]]:
    """The ETDump's run blocks as JSON objects (``{"name", "events": [...]}``), in order.

    Raises ``ValueError`` naming the file when it does not read (cut short, not an ETDump).
    """
    package = _executorch_folder()
    flatc = package / "data" / "bin" / "flatc"
    if not flatc.is_file():
        raise ValueError(f"the executorch package at {package} has no flatc to read ETDumps")
    with tempfile.TemporaryDirectory(prefix="benchlab-etdump-") as tmp:
        folder = Path(tmp)
        for schema in _SCHEMAS:
            shutil.copyfile(package / "devtools" / "etdump" / schema, folder / schema)
        shutil.copyfile(path, folder / "etdump.bin")
        proc = subprocess.run(
            [str(flatc), "--size-prefixed", "--json", "--strict-json", "-o", str(folder),
             str(folder / _SCHEMAS[0]), "--", str(folder / "etdump.bin")],
            capture_output=True, text=True, timeout=60, check=False)
        out = folder / "etdump.json"
        if proc.returncode != 0 or not out.is_file():
            why = (proc.stderr or proc.stdout).strip().splitlines()
            raise ValueError(f"{path} is not an ETDump that reads "
                             f"({why[-1] if why else f'flatc exited {proc.returncode}'})")
        data = json.loads(out.read_text())
    blocks = data.get("run_data") if isinstance(data, dict) else None
    if not isinstance(blocks, list):
        raise ValueError(f"{path}: an ETDump without run data")
    return blocks


def _row(events: Sequence[dict[str, Any]], delegate: str) -> dict[str, float]:
    """One execution's operator times in ms (an operator called twice: the sum)."""
    row: dict[str, float] = {}
    for event in events:
        profile = event.get("profile_event")
        if not isinstance(profile, dict):
            continue
        name = str(profile.get("name") or "")
        inner = profile.get("delegate_debug_id_str")
        if inner:
            label = f"{delegate}: {inner}"
        elif name.startswith("native_call_"):
            label = name[len("native_call_"):]
        elif name == "DELEGATE_CALL":
            label = f"{delegate}: DELEGATE_CALL"
        elif name in _FRAMES or not name:
            continue
        else:
            label = name
        ms = (int(profile.get("end_time", 0)) - int(profile.get("start_time", 0))) / 1e6
        row[label] = row.get(label, 0.0) + ms
    return row


def etdump_operator_rows(path: Path, *, warmup: int = 0,
                         delegate: str = "delegate") -> list[dict[str, float]]:
    """Per-operator times (ms) of each execution the ETDump recorded after the first
    ``warmup`` ones: the shape of a host backend's ``profile_ops``. A delegate's events are
    labelled ``<delegate>: <event>`` (``xnnpack: Fully Connected (NC, F32) GEMM #1``), the
    whole delegate call ``<delegate>: DELEGATE_CALL``, a kernel call by its operator
    (``addmm.out``). ``ValueError`` for a file that does not read."""
    runs = [block for block in etdump_events(path) if block.get("name") == "Execute"]
    return [_row(block.get("events") or [], delegate) for block in runs[warmup:]]
