"""docs/scenarios.md's Python example runs as written and gives what its comments say.

The block is executed as it stands; only ``benchlab.run`` gets this test's store and
artifact cache."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

import benchlab

DOC = Path(__file__).parents[1] / "docs" / "scenarios.md"

pytest.importorskip("mlperf_loadgen")


@pytest.mark.slow
def test_the_python_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            zoo_cache_dir: Path) -> None:
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)  # type: ignore
    monkeypatch.setattr(benchlab, "run", functools.partial(
        benchlab.run, db=tmp_path / "results.db", cache_dir=zoo_cache_dir))
    namespace: dict = {}
    exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - the documented example
    result = namespace["result"]
    assert result.ok, (result.error, result.stderr_tail)
    assert result.details["scenario"]["name"] == "single_stream"
    assert namespace["p90"] > 0 and namespace["valid"] is True
