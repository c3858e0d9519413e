"""The runner's loop run in the test's own process on a configuration, its metric lines read
back: each metric's values and the details (the runner, scenario and backend tests share it)."""

from __future__ import annotations

import io
from typing import Any

from benchlab.protocol.lines import parse_output
from benchlab.runner.config import RunnerConfig


def runner_values(config: RunnerConfig) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Run the runner's loop on ``config`` in this process: each metric's values, the details."""
    from benchlab.runner.loop import measure

    out = io.StringIO()
    measure(config, out)
    parsed = parse_output(out.getvalue())
    values: dict[str, list[float]] = {}
    for sample in parsed.samples:
        values.setdefault(sample.metric, []).append(sample.value)
    return values, dict(parsed.details)
