"""Targets: where commands run (``host`` here; ``ssh`` and ``adb`` plug in the same way)."""

from __future__ import annotations

from benchlab.targets.base import Availability, CommandResult, RunRequest, Target

__all__ = ["Availability", "CommandResult", "RunRequest", "Target"]
