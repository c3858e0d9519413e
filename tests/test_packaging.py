"""What a wheel carries: every file of the package that is not Python is package data, and
every package-data pattern names files that exist (an editable install reads the tree, so
only this test sees what an installed wheel would lack)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "benchlab"


def test_every_data_file_of_the_package_is_package_data_and_every_pattern_matches() -> None:
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["package-data"]["benchlab"]
    for pattern in patterns:
        assert list(PACKAGE.glob(pattern)), f"package-data {pattern!r} matches no file"
    carried = {path for pattern in patterns for path in PACKAGE.glob(pattern)}
    data = {path for path in PACKAGE.rglob("*") if path.is_file()
            and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts}
    assert sorted(str(p.relative_to(PACKAGE)) for p in data - carried) == []
