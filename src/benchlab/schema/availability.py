"""Whether a plug-in (a framework, a target, a power meter) can be used here: one shape for
all of them, below every layer that reports it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Availability"]


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether a plugin can be used here, its version, and why not when it cannot."""

    ok: bool
    version: str | None = None
    reason: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)
