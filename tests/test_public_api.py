"""The public API: ``benchlab.__all__`` is sorted, complete and every name resolves."""

from __future__ import annotations

import benchlab


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert list(benchlab.__all__) == sorted(benchlab.__all__)
    for name in benchlab.__all__:
        assert getattr(benchlab, name) is not None
        doc = getattr(getattr(benchlab, name), "__doc__", None)
        assert name == "SCHEMA_VERSION" or doc, f"{name} has no docstring"
