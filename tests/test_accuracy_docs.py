"""docs/accuracy.md's layer-table example runs as written and shows what the page says.

The block is executed as it stands; only ``benchlab.outputs`` gets this test's artifact cache,
and MobileNetV2 exports only the two ONNX formats the example needs (the others take minutes).
The commented results are checked by name and operator exactly and by SQNR within 1 dB: the
int8 kernels may round differently on another x86 CPU.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import replace
from pathlib import Path

import pytest

import benchlab
import benchlab.zoo as zoo

DOC = Path(__file__).parents[1] / "docs" / "accuracy.md"


def _example() -> str:
    text = DOC.read_text()
    section = text.split("### The first layer that diverges", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_layer_table_example_runs_as_written(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    code = _example()
    monkeypatch.setitem(zoo.ZOO, "mobilenet_v2",
                        replace(zoo.ZOO["mobilenet_v2"], formats=("onnx", "onnx_int8")))
    monkeypatch.setattr(benchlab, "outputs",
                        functools.partial(benchlab.outputs, cache_dir=tmp_path / "cache"))
    namespace: dict = {}
    exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - the documented example
    out = namespace["out"]
    first = out.layers.first_diverging
    assert (first.name, first.op) == ("input0", "input")
    assert first.sqnr == pytest.approx(39.15, abs=1.0)
    # The comment under the list comprehension is its documented value.
    shown = code.split("layers[:4]]\n", 1)[1]
    documented = ast.literal_eval(" ".join(line.lstrip("# ").strip()
                                           for line in shown.strip().splitlines()))
    rows = [(row.name, row.op, round(row.sqnr, 1)) for row in out.layers.layers[:4]]
    assert [r[:2] for r in rows] == [d[:2] for d in documented]
    for (_, _, got), (_, _, want) in zip(rows, documented, strict=True):
        assert got == pytest.approx(want, abs=1.0)
    # It grows layer by layer, as the page says, to the logits' 26 dB or so.
    assert out.layers.layers[-1].sqnr < first.sqnr
