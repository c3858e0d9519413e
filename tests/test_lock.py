"""requirements/lock.txt pins what README's commands install, and still agrees with pyproject."""

from __future__ import annotations

import tomllib
from pathlib import Path

from machine_facts import locked_versions
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parent.parent


def _declared() -> list[Requirement]:
    """Every requirement of benchlab and of the extras README's commands install."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted, seen, requirements = ["test"], set(), [Requirement(r) for r in project["dependencies"]]
    while wanted:
        extra = wanted.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in extras[extra]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == "benchlab":
                wanted.extend(requirement.extras)
            else:
                requirements.append(requirement)
    return requirements


def test_every_declared_dependency_is_pinned_within_its_range() -> None:
    pins = locked_versions()
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is declared in pyproject.toml but not locked: run " \
                             "requirements/refresh"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"lock.txt pins {name}=={pins[name]}, outside pyproject's {requirement}: "
            "run requirements/refresh")


def test_torch_is_the_cpu_build() -> None:
    # Any other torch 2.13.0 on PyPI is a CUDA build of several GB.
    assert locked_versions()["torch"] == "2.13.0+cpu"


def test_readme_commands_and_ci_install_from_thelocked_versions() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = [line for line in readme.splitlines() if ".venv/bin/pip install" in line][:2]
    assert len(commands) == 2
    assert all("-c requirements/lock.txt" in line for line in commands)
    assert commands[1].split("# ")[0].strip() in (ROOT / ".ci" / "run").read_text()
