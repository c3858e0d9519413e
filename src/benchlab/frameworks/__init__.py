"""Framework adapters: one per inference runtime, registered as ``benchlab.frameworks``."""

from __future__ import annotations

from benchlab.frameworks.base import Framework, Invocation, JobContext, Unsupported

__all__ = ["Framework", "Invocation", "JobContext", "Unsupported"]
