"""The public API: ``benchlab.__all__`` is sorted, complete and every name resolves."""

from __future__ import annotations

from pathlib import Path

import benchlab


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert list(benchlab.__all__) == sorted(benchlab.__all__)
    for name in benchlab.__all__:
        assert getattr(benchlab, name) is not None
        doc = getattr(getattr(benchlab, name), "__doc__", None)
        assert name == "SCHEMA_VERSION" or doc, f"{name} has no docstring"


def test_no_public_name_is_shadowed_by_a_submodule() -> None:
    # Importing a submodule sets it as an attribute of its package. A public name spelled like
    # a submodule would turn into that module once anything imported it, so which object
    # ``benchlab.<name>`` is would depend on what ran before (issue 24: ``benchlab.outputs``
    # became "'module' object is not callable" in a shuffled suite).
    import importlib
    import pkgutil

    submodules = {info.name for info in pkgutil.iter_modules(benchlab.__path__)}
    assert set(benchlab.__all__).isdisjoint(submodules)
    before = {name: getattr(benchlab, name) for name in benchlab.__all__}
    for name in sorted(submodules - {"__main__"}):
        importlib.import_module(f"benchlab.{name}")
    assert {name: getattr(benchlab, name) for name in benchlab.__all__} == before


def test_the_product_imports_no_stand_in() -> None:
    # The stand-in phone and board are a separate distribution (standin/): test support, not
    # benchlab. An import of it from the package would ship test code to every user.
    import ast

    package = Path(benchlab.__file__).parent
    offenders = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("benchlab_standin")]
    assert offenders == []
    assert not (package / "standin").exists()
