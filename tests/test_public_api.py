"""The public API: ``benchlab.__all__`` is sorted, complete and every name resolves; every name
that imported before the package was arranged into folders still imports from where it did."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import benchlab
from benchlab.lazy import MOVED_MODULES


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


# Every module that stood at the top of the package before it was arranged into folders, with
# its public names as they were then (its __all__, or its top-level functions and classes).
NAMES_BEFORE_FOLDERS = json.loads(
    (Path(__file__).parent / "public_names_before_folders.json").read_text())


@pytest.mark.filterwarnings("ignore:.*is now benchlab.*:DeprecationWarning")
@pytest.mark.parametrize("module", sorted(NAMES_BEFORE_FOLDERS))
def test_every_name_that_worked_before_the_folders_still_imports(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in NAMES_BEFORE_FOLDERS[module] if not hasattr(imported, name)]
    assert missing == [], f"{module} lost {missing}"


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_MODULES.items()))
def test_an_old_module_path_is_the_module_at_its_new_home(old: str, new: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Imported afresh, so the finder answers (and warns) whatever ran before in this worker.
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} is now {new}.*goes in benchlab 0.2.0"):
        moved = importlib.import_module(old)
    # The same object, so that a name patched or registered through one path is so in both.
    assert moved is importlib.import_module(new)
    assert sys.modules[old] is sys.modules[new]
    assert sys.modules[new].__spec__.name == new


def test_documented_imports_run_as_written() -> None:
    # The import lines README and docs/ show (README: generation_grid, Side; docs/ab.md: steps),
    # through the old paths and the new, in a fresh interpreter as a user's script runs them.
    # Deprecations are errors here: the docs show no old path.
    code = "\n".join([
        "from benchlab.schema.generation import generation_grid",
        "from benchlab.protocol.step import steps",
        "from benchlab.ab import Side",
        "from benchlab.spec import load",
        "from benchlab.protocol import format_metric",
        "from benchlab.harness.sweep import Sweep",
        "from benchlab.harness.results import Results",
        "import benchlab.api, benchlab.cli",
        "assert benchlab.cli.app is benchlab.cli.commands.app",
    ])
    subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], check=True,
                   timeout=120)
    # A script on an old path runs, and Python's default filter shows it the new path.
    old = subprocess.run([sys.executable, "-c", "from benchlab.step import steps"],
                         capture_output=True, text=True, timeout=120, check=True)
    assert ("<string>:1: DeprecationWarning: benchlab.step is now benchlab.protocol.step"
            in old.stderr), old.stderr


def test_the_package_itself_imports_no_old_path() -> None:
    # The old paths serve scripts written before the folders; benchlab's own modules name the
    # new homes, so the import graph (tests/test_import_graph.py) sees every edge.
    import ast

    package = Path(benchlab.__file__).parent
    offenders = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if isinstance(node, ast.ImportFrom) and node.module == "benchlab":
                names = [f"benchlab.{a.name}" for a in node.names]
            offenders += [f"{path.relative_to(package)}: {n}" for n in names
                          if n in MOVED_MODULES]
    assert offenders == []


@pytest.mark.parametrize("package", ["benchlab.cli", "benchlab.harness", "benchlab.protocol",
                                     "benchlab.schema", "benchlab.stats"])
def test_a_package_of_modules_answers_every_public_name_of_its_modules(package: str) -> None:
    # One face per package, declared (PUBLIC_MODULES): ``from benchlab.harness import Sweep``
    # works as ``from benchlab.harness import plan`` does, each name the object of its home.
    faced = importlib.import_module(package)
    modules = set(faced.PUBLIC_MODULES)
    homes: dict[str, str] = {}
    for home in (f"{package}.{name}" for name in faced.PUBLIC_MODULES):
        module = importlib.import_module(home)
        assert module.__name__.rpartition(".")[0] == package
        # A name spelled like a module of the package (harness.outputs' outputs) is that module
        # once imported, as every package attribute is: the function is its module's.
        for name in set(module.__all__) - modules:
            if name in homes:  # one name, two homes: the same object, re-exported
                assert getattr(module, name) is getattr(
                    importlib.import_module(homes[name]), name), (name, home, homes[name])
                continue
            homes[name] = home
            assert getattr(faced, name) is getattr(module, name), (name, home)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nope'"):
        faced.nope  # noqa: B018
    on_disk = {p.stem for p in Path(faced.__file__).parent.glob("*.py")} - {"__init__"}
    assert modules == on_disk, "every module of the package is in its face, or says why not"
