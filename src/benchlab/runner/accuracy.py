"""Accuracy beside latency: compare a backend's outputs with reference outputs.

A reference file is an ``.npz`` archive holding the inputs to feed (``input.<name>``, in input
order), the expected outputs (``output.0``, ``output.1``, ...) and optionally the model's task
(``task``, a 0-d string array; ``classification`` enables top-k agreement). More input sets
(``set1.input.<name>``, ``set1.output.0``, ...) make the statistics cover more samples: the
first set is what gets timed, every set is compared. The zoo writes one
per model from the PyTorch fp32 output; users can name their own golden file under the model
file key ``reference`` (FAI-PEP's ``error`` metric, revived).

This module imports numpy only, so it runs in the runner process next to any runtime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.schema.metrics import units_of
from benchlab.schema.result import Metric

__all__ = [
    "ATTRIBUTION_METRICS",
    "ERROR_METRICS",
    "FLOOR_METRICS",
    "Reference",
    "attribution_stats",
    "error_stats",
    "floor_stats",
    "load_reference",
    "nudged",
    "save_reference",
    "sqnr_db",
    "stack_sets",
    "to_arrays",
]

#: Metric name → unit of every statistic :func:`error_stats` can report (units from
#: :data:`benchlab.schema.metrics.METRICS`, as every table below).
ERROR_METRICS: dict[str, str] = units_of(
    Metric.ERROR_MAX_ABS, Metric.ERROR_MEAN_ABS, Metric.ERROR_MAX_REL, Metric.ERROR_L2,
    Metric.ERROR_L2_REL, Metric.CROSS_ENTROPY, Metric.KL_DIVERGENCE, Metric.SQNR,
    Metric.COSINE_SIMILARITY, Metric.TOP1_AGREEMENT, Metric.TOP5_AGREEMENT)
#: Metric name → unit of every statistic :func:`attribution_stats` reports.
ATTRIBUTION_METRICS: dict[str, str] = units_of(
    Metric.QUANTIZATION_SQNR, Metric.QUANTIZATION_L2_REL, Metric.LOWERING_SQNR,
    Metric.LOWERING_L2_REL)
#: Metric name → unit of every statistic :func:`floor_stats` reports.
FLOOR_METRICS: dict[str, str] = units_of(Metric.LOWERING_FLOOR_SQNR,
                                         Metric.LOWERING_FLOOR_L2_REL)
# SQNR of bit-identical outputs is infinite; the metric protocol carries finite numbers only,
# so identical outputs read as this ceiling (documented in docs/accuracy.md).
SQNR_CEILING_DB = 300.0


@dataclass(frozen=True)
class Reference:
    """Inputs to feed and the outputs they should produce (none: feed the inputs only).

    ``more`` holds further ``(inputs, outputs)`` sets compared after the first.
    """

    inputs: dict[str, np.ndarray]
    outputs: list[np.ndarray]
    task: str = ""
    more: list[tuple[dict[str, np.ndarray], list[np.ndarray]]] = field(default_factory=list)


def save_reference(
    path: Path,
    inputs: Mapping[str, np.ndarray],
    outputs: Sequence[np.ndarray],
    task: str = "",
    more: Sequence[tuple[Mapping[str, np.ndarray], Sequence[np.ndarray]]] = (),
) -> None:
    """Write a reference archive (see the module docstring for its layout)."""
    arrays: dict[str, Any] = {}
    for index, (ins, outs) in enumerate([(inputs, outputs), *more]):
        prefix = f"set{index}." if index else ""
        arrays.update({f"{prefix}input.{name}": np.asarray(a) for name, a in ins.items()})
        arrays.update({f"{prefix}output.{i}": np.asarray(a) for i, a in enumerate(outs)})
    arrays["task"] = np.array(task)
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def _read_set(archive: Any, keys: list[str], prefix: str
              ) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    inputs = {k[len(prefix) + len("input."):]: archive[k] for k in keys
              if k.startswith(prefix + "input.")}
    numbered = sorted((int(k[len(prefix) + len("output."):]), k) for k in keys
                      if k.startswith(prefix + "output."))
    return inputs, [archive[k] for _, k in numbered]


def load_reference(path: str | Path) -> Reference:
    """Read a reference archive; raises ``ValueError`` naming what is missing."""
    with np.load(path, allow_pickle=False) as archive:
        keys = list(archive.keys())
        inputs, outputs = _read_set(archive, keys, "")
        more = []
        index = 1
        while any(k.startswith(f"set{index}.") for k in keys):
            more.append(_read_set(archive, keys, f"set{index}."))
            index += 1
        task = str(archive["task"]) if "task" in keys else ""
    if not outputs and not inputs:
        raise ValueError(f"reference file {path} holds no 'input.NAME' or 'output.N' arrays")
    return Reference(inputs=inputs, outputs=outputs, task=task, more=more)


def to_arrays(value: Any) -> list[np.ndarray]:
    """Flatten a runtime's return value (tensor, array, list, tuple, dict) into numpy arrays.

    Works by duck typing so that no runtime is imported here: torch tensors expose
    ``detach``, OpenVINO and ONNX Runtime values convert with ``np.asarray``.
    """
    if value is None:
        return []
    if isinstance(value, np.ndarray):
        return [value]
    if hasattr(value, "detach"):
        return [value.detach().cpu().numpy()]
    if isinstance(value, Mapping) or (hasattr(value, "values") and hasattr(value, "keys")):
        return [a for item in value.values() for a in to_arrays(item)]
    if isinstance(value, (list, tuple)):
        return [a for item in value for a in to_arrays(item)]
    if hasattr(value, "data") and hasattr(value, "shape"):  # OpenVINO Tensor
        return [np.array(value.data)]
    return [np.asarray(value)]


def _pair_outputs(
    outputs: Sequence[np.ndarray], reference: Sequence[np.ndarray]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Match outputs to reference outputs: in order when sizes agree, else by size.

    Some converters reorder outputs (TFLite signatures) or drop size-1 dimensions; matching by
    element count recovers the pairing when it is unambiguous and fails loudly when nothing fits.
    """
    if len(outputs) != len(reference):
        raise ValueError(f"the model returned {len(outputs)} outputs; the reference has "
                         f"{len(reference)}")
    arrays = [np.asarray(o) for o in outputs]
    if all(a.size == r.size for a, r in zip(arrays, reference, strict=True)):
        return [(a.reshape(r.shape), r) for a, r in zip(arrays, reference, strict=True)]
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    unused = list(range(len(arrays)))
    for ref in reference:
        fits = [i for i in unused if arrays[i].size == ref.size]
        if not fits:
            raise ValueError(f"cannot match output shapes {[a.shape for a in arrays]} to the "
                             f"reference's {[r.shape for r in reference]}")
        exact = [i for i in fits if arrays[i].shape == ref.shape]
        chosen = (exact or fits)[0]
        unused.remove(chosen)
        pairs.append((arrays[chosen].reshape(ref.shape), ref))
    return pairs


def _topk_agreement(actual: np.ndarray, expected: np.ndarray, k: int) -> float:
    """Share of rows whose top-1 class is among the other's top-k (k=1: same top-1)."""
    a = actual.reshape(actual.shape[0], -1)
    e = expected.reshape(expected.shape[0], -1)
    k = min(k, e.shape[1])
    expected_top1 = np.argmax(e, axis=1)
    actual_topk = np.argsort(-a, axis=1)[:, :k]
    return float(np.mean([expected_top1[i] in actual_topk[i] for i in range(a.shape[0])]))


def _class_distributions(scores: np.ndarray) -> np.ndarray:
    """Rows of class probabilities: ``scores`` as they are when each row already is a
    distribution (non-negative, summing to 1), else their softmax (logits)."""
    rows = scores.reshape(scores.shape[0], -1).astype(np.float64)
    if np.all(rows >= 0) and np.allclose(rows.sum(axis=1), 1.0, atol=1e-3):
        return rows
    shifted = rows - rows.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


def _entropies(actual: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    """Mean cross entropy H(p, q) and KL(p || q) over rows, in nats, where p are the
    reference's class probabilities and q the output's."""
    p = _class_distributions(expected)
    q = np.clip(_class_distributions(actual), 1e-12, None)
    cross = -np.sum(p * np.log(q), axis=1)
    entropy = -np.sum(np.where(p > 0, p * np.log(np.clip(p, 1e-300, None)), 0.0), axis=1)
    return float(np.mean(cross)), float(np.mean(np.maximum(cross - entropy, 0.0)))


def error_stats(
    outputs: Sequence[np.ndarray], reference: Sequence[np.ndarray], task: str = ""
) -> dict[str, float]:
    """Error statistics of ``outputs`` against ``reference`` over all outputs together.

    ``error_max_rel`` divides each element's error by ``|reference| + 1e-3 · max|reference|``
    so elements near zero do not blow it up; SQNR is ``10·log10(Σref² / Σ(out−ref)²)``.
    ``error_l2`` is ‖out − ref‖₂ and ``error_l2_rel`` that over ‖ref‖₂ (ExecuTorch's RFC on
    accuracy evaluation names both). For ``task == "classification"`` (first output, rows are
    batch items) top-1/top-5 agreement, cross entropy and KL divergence (nats, of the output's
    class probabilities against the reference's; logits go through a softmax) are added.
    """
    pairs = _pair_outputs(outputs, reference)
    got = np.concatenate([o.astype(np.float64).reshape(-1) for o, _ in pairs])
    want = np.concatenate([r.astype(np.float64).reshape(-1) for _, r in pairs])
    diff = np.abs(got - want)
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    signal = float(np.sum(want * want))
    noise = float(np.sum(diff * diff))
    sqnr = sqnr_db(signal, noise)
    norms = float(np.linalg.norm(got) * np.linalg.norm(want))
    l2 = float(np.sqrt(noise))
    ref_norm = float(np.sqrt(signal))
    stats: dict[str, float] = {
        Metric.ERROR_MAX_ABS: float(diff.max()) if diff.size else 0.0,
        Metric.ERROR_MEAN_ABS: float(diff.mean()) if diff.size else 0.0,
        Metric.ERROR_MAX_REL: float(np.max(diff / (np.abs(want) + 1e-3 * scale + 1e-30)))
        if diff.size else 0.0,
        Metric.ERROR_L2: l2,
        Metric.SQNR: sqnr,
        Metric.COSINE_SIMILARITY: float(np.dot(got, want) / norms) if norms > 0 else float(
            np.array_equal(got, want)),
    }
    if ref_norm > 0 or l2 == 0:  # an all-zero reference has no relative error to speak of
        stats[Metric.ERROR_L2_REL] = l2 / ref_norm if ref_norm > 0 else 0.0
    if task == "classification":
        actual, expected = pairs[0]
        if expected.ndim >= 2:
            stats[Metric.TOP1_AGREEMENT] = _topk_agreement(actual, expected, 1)
            stats[Metric.TOP5_AGREEMENT] = _topk_agreement(actual, expected, 5)
            stats[Metric.CROSS_ENTROPY], stats[Metric.KL_DIVERGENCE] = _entropies(
                actual, expected)
    return stats


def _flat(pairs: Sequence[tuple[np.ndarray, np.ndarray]], side: int) -> np.ndarray:
    return np.concatenate([p[side].astype(np.float64).reshape(-1) for p in pairs])


def sqnr_db(signal: float, noise: float) -> float:
    """``10·log10(signal / noise)``, held to ±:data:`SQNR_CEILING_DB` (identical: the ceiling)."""
    if noise == 0.0:
        return SQNR_CEILING_DB
    if signal == 0.0:
        return -SQNR_CEILING_DB
    return min(SQNR_CEILING_DB, 10.0 * float(np.log10(signal / noise)))


def attribution_stats(
    outputs: Sequence[np.ndarray], simulated: Sequence[np.ndarray],
    reference: Sequence[np.ndarray],
) -> dict[str, float]:
    """Split a quantized model's error against the fp32 ``reference`` in two.

    ``simulated`` are the outputs of the quantization recipe run exactly (the fake-quantized
    eager model, or the quantized graph's own arithmetic): against the reference they are the
    *quantization* error; the runtime's ``outputs`` against them are the *lowering* error (what
    its kernels add). Both are measured on the reference's scale (its L2 norm is the signal),
    and since runtime − fp32 = (simulated − fp32) + (runtime − simulated), the two relative
    L2 errors bracket the total ``error_l2_rel``: |q − l| ≤ total ≤ q + l.
    """
    quant = _pair_outputs(simulated, reference)
    lowering = _pair_outputs(outputs, [s for s, _ in quant])
    want = _flat(quant, 1)
    sim = _flat(quant, 0)
    got = _flat(lowering, 0)
    signal = float(np.sum(want * want))
    quant_noise = float(np.sum((sim - want) ** 2))
    lowering_noise = float(np.sum((got - sim) ** 2))
    norm = float(np.sqrt(signal))
    stats = {Metric.QUANTIZATION_SQNR: sqnr_db(signal, quant_noise),
             Metric.LOWERING_SQNR: sqnr_db(signal, lowering_noise)}
    if norm > 0:
        stats[Metric.QUANTIZATION_L2_REL] = float(np.sqrt(quant_noise)) / norm
        stats[Metric.LOWERING_L2_REL] = float(np.sqrt(lowering_noise)) / norm
    return stats


def nudged(inputs: Mapping[str, np.ndarray], seed: int = 0) -> dict[str, np.ndarray] | None:
    """``inputs`` with every float element moved one ulp up or down (a seeded sign per
    element), integers left alone; ``None`` when no input is a float (token ids: there is no
    rounding-sized change to make).

    The smallest change a float pipeline can see: in a deep int8 network it still flips a few
    activations sitting on a rounding boundary, and those flips spread, which is the floor
    under any comparison of two int8 computations of the same recipe.
    """
    rng = np.random.default_rng(seed)
    moved: dict[str, np.ndarray] = {}
    changed = False
    for name, array in inputs.items():
        array = np.asarray(array)
        if np.issubdtype(array.dtype, np.floating):
            towards = np.where(rng.random(array.shape) < 0.5, -np.inf, np.inf).astype(array.dtype)
            array = np.nextafter(array, towards)
            changed = True
        moved[name] = array
    return moved if changed else None


def floor_stats(moved: Sequence[np.ndarray], outputs: Sequence[np.ndarray],
                reference: Sequence[np.ndarray]) -> dict[str, float]:
    """The lowering error's rounding floor: the runtime's outputs on :func:`nudged` inputs
    (``moved``) against its ``outputs`` on the inputs as they are, on the fp32 ``reference``'s
    scale like :func:`attribution_stats`, so the figures compare with the lowering ones."""
    pairs = _pair_outputs(outputs, reference)
    shifted = _pair_outputs(moved, [o for o, _ in pairs])
    want = _flat(pairs, 1)
    noise = float(np.sum((_flat(shifted, 0) - _flat(pairs, 0)) ** 2))
    signal = float(np.sum(want * want))
    stats = {Metric.LOWERING_FLOOR_SQNR: sqnr_db(signal, noise)}
    if signal > 0:
        stats[Metric.LOWERING_FLOOR_L2_REL] = float(np.sqrt(noise / signal))
    return stats


def stack_sets(sets: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Each output of every input set joined along the batch axis (rows for top-k)."""
    if len(sets) == 1:
        return sets[0]
    return [np.concatenate([np.asarray(s[i]).reshape((-1, *np.asarray(s[i]).shape[1:]))
                            for s in sets]) if np.asarray(sets[0][i]).ndim else
            np.stack([np.asarray(s[i]) for s in sets]) for i in range(len(sets[0]))]
