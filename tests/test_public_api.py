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


def test_the_package_and_the_api_load_no_terminal_or_web_stack() -> None:
    # ``import benchlab`` is every runner process's first line and ``benchlab.api`` every
    # script's: rich (the terminal reporters), typer (the CLI) and the lab's web stack are the
    # business of those who draw or serve. Checked in a fresh interpreter, as the runner
    # import test does (tests/frameworks/runner_imports.py).
    import json
    import subprocess
    import sys

    heavy = ("rich", "typer", "fastapi", "starlette", "uvicorn", "procrastinate", "httpx")
    probe = ("import json, sys, importlib; importlib.import_module(sys.argv[1]); "
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    for module in ("benchlab", "benchlab.api"):
        proc = subprocess.run([sys.executable, "-c", probe, module], capture_output=True,
                              text=True, timeout=120, check=True)
        loaded = set(json.loads(proc.stdout.strip().splitlines()[-1]))
        assert loaded.isdisjoint(heavy), (module, sorted(loaded & set(heavy)))
        if module == "benchlab":  # the package alone: not even its specs' pydantic models
            assert loaded.isdisjoint({"pydantic", "sqlalchemy", "numpy", "yaml"}), sorted(
                loaded & {"pydantic", "sqlalchemy", "numpy", "yaml"})
