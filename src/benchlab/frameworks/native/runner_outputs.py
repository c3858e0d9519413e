"""The outputs benchlab's own native runners hand back, scored on the host.

``benchlab-et-runner`` and ``benchlab-ort-runner`` write every output into one ``outputs.bin``
with a manifest, ``outputs.json`` (:mod:`benchlab.protocol.tensorfiles`); the first input set's
outputs are named ``output<i>``, input set k's ``set<k>.output<i>`` (the ONNX Runtime runner
runs every reference set, the ExecuTorch runner the first).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.frameworks.native.common import SampleList
from benchlab.protocol.tensorfiles import read_tensors
from benchlab.runner.accuracy import ERROR_METRICS, error_stats, load_reference, stack_sets

__all__ = ["MANIFEST", "OUTPUTS", "score_runner_outputs"]

#: The manifest and the data file a native runner writes into its output folder.
MANIFEST, OUTPUTS = "outputs.json", "outputs.bin"


def score_runner_outputs(files: Mapping[str, Path], samples: SampleList,
                         details: dict[str, Any]) -> None:
    """The outputs the runner handed back, against the model's reference (when both are
    here): the error statistics the Python runner prints, over the reference sets it ran."""
    if MANIFEST not in files:
        return
    try:
        tensors = read_tensors(files[MANIFEST], files)
    except ValueError as exc:
        details["accuracy_skipped"] = f"the runner's outputs do not read: {exc}"
        return
    got: list[list[np.ndarray]] = [[]]
    for name, array in tensors.items():
        k = int(name[3:name.index(".")]) if name.startswith("set") else 0
        got += [[] for _ in range(k + 1 - len(got))]
        got[k].append(array)
    details["outputs"] = [{"index": i, "sizes": list(a.shape)} for i, a in enumerate(got[0])]
    reference_file = files.get("files.reference")
    if reference_file is None:
        return
    try:
        reference = load_reference(reference_file)
    except (OSError, ValueError, KeyError):
        return
    if not reference.outputs:
        return
    want = [reference.outputs, *(outs for _, outs in reference.more if outs)][:len(got)]
    got = got[:len(want)]
    try:
        stats = error_stats(stack_sets(got), stack_sets(want), reference.task)
    except ValueError as exc:
        details["accuracy_skipped"] = f"the outputs do not pair with the reference's: {exc}"
        return
    details["reference_sets"] = len(got)
    details["reference_task"] = reference.task
    for metric, value in stats.items():
        samples.add("NET", metric, value, ERROR_METRICS[metric])
