"""The per-layer error table: a model's intermediate outputs against a reference's.

A backend that can expose its intermediate outputs (``layer_outputs``) hands the runner two
dicts of arrays keyed by tensor name, its own and the reference's, and the execution order of
its own; this compares those with the same name and shape. numpy only, like the rest of the
runner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from benchlab.schema.diagnosis import LAYER_SQNR_THRESHOLD_DB, LayerError, LayerTable
from benchlab.runner.accuracy import SQNR_CEILING_DB, sqnr_db

__all__ = ["compare_layers", "layer_error"]


def layer_error(name: str, op: str, got: np.ndarray, want: np.ndarray) -> LayerError:
    """SQNR, largest absolute error and relative L2 error of one tensor against its reference."""
    g = np.asarray(got, dtype=np.float64).reshape(-1)
    w = np.asarray(want, dtype=np.float64).reshape(-1)
    noise = float(np.sum((g - w) ** 2))
    signal = float(np.sum(w * w))
    sqnr = max(-SQNR_CEILING_DB, sqnr_db(signal, noise))
    max_abs = float(np.max(np.abs(g - w))) if g.size else 0.0
    l2_rel = float(np.sqrt(noise / signal)) if signal > 0 else (0.0 if noise == 0 else
                                                                 float("inf"))
    return LayerError(name=name, op=op, sqnr=sqnr, max_abs=max_abs, l2_rel=min(l2_rel, 1e30))


def compare_layers(
    got: Mapping[str, np.ndarray],
    want: Mapping[str, np.ndarray],
    order: Sequence[tuple[str, str]],
    reference: str,
    threshold_db: float = LAYER_SQNR_THRESHOLD_DB,
) -> LayerTable:
    """The table over ``order`` (tensor name, producing op), in that order.

    Tensors that are not floating point (indices, masks) are left out; a name the reference
    lacks, or holds in another shape, counts as unmatched.
    """
    layers: list[LayerError] = []
    unmatched: list[str] = []
    for name, op in order:
        mine = got.get(name)
        if mine is None or not np.issubdtype(np.asarray(mine).dtype, np.floating):
            continue
        theirs = want.get(name)
        if theirs is None or np.asarray(theirs).size != np.asarray(mine).size:
            unmatched.append(name)
            continue
        layers.append(layer_error(name, op, mine, theirs))
    return LayerTable(reference=reference, layers=tuple(layers), threshold_db=threshold_db,
                      matched=len(layers), unmatched=tuple(unmatched))
