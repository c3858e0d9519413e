"""The ``openvino`` framework's option values, shared by its adapter and its runner backend.

Plain constants only: the runner process imports this beside ``backend.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HINTS", "PRECISIONS", "canonical_precision"]

#: Precision names accepted by the ``precision`` option → OpenVINO's element type names.
PRECISIONS: Mapping[str, str] = {
    "f32": "f32", "fp32": "f32", "bf16": "bf16", "f16": "f16", "fp16": "f16",
}
HINTS = ("latency", "throughput")


def canonical_precision(value: Any) -> str | None:
    """``f32``/``bf16``/``f16`` for an accepted spelling (``fp32`` too), else ``None``."""
    return PRECISIONS.get(str(value).lower())
