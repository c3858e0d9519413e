"""The test settings' one definition reaches every layer: spec files, overrides, CLI, runner, docs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchlab.cli.commands import app
from benchlab.errors import SpecError, UsageError
from benchlab.harness.overrides import TestOverrides
from benchlab.runner.config import RunnerConfig
from benchlab.schema.settings import SettingInfo, TestSettings, check_settings, settings_info
from benchlab.spec import load_spec
from benchlab.spec.types import TestCase

DOCS = Path(__file__).resolve().parents[2] / "docs" / "specs.md"
BOUNDED = [info for info in settings_info() if info.bounds]
# Where the runner's wire format names a setting differently.
RUNNER_NAMES = {"iter": "iterations"}


def _below(info: SettingInfo) -> Any:
    """A value just outside the setting's bounds."""
    if info.lt is not None and info.ge is None and info.gt is None:
        return info.lt
    low = info.ge - 1 if info.ge is not None else info.gt
    return int(low) if info.kind is int else float(low)


def _spec(tmp_path: Path, **settings: Any) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"model": {"name": "m", "format": "generic"},
                                "tests": [{"identifier": "t", "commands": ["true"], **settings}]}))
    return path


def test_a_spec_without_settings_gets_every_default(tmp_path: Path) -> None:
    (test,) = load_spec(_spec(tmp_path)).tests
    for info in settings_info():
        assert getattr(test, info.name) == info.default, info.name


@pytest.mark.parametrize("info", BOUNDED, ids=lambda info: info.name)
def test_a_spec_value_out_of_bounds_names_the_field(tmp_path: Path, info: SettingInfo) -> None:
    with pytest.raises(SpecError) as error:
        load_spec(_spec(tmp_path, **{info.name: _below(info)}))
    assert f"tests[0].{info.name}" in str(error.value)


@pytest.mark.parametrize("info", BOUNDED, ids=lambda info: info.name)
def test_an_override_out_of_bounds_is_a_usage_error(info: SettingInfo) -> None:
    with pytest.raises(UsageError, match=info.name):
        TestOverrides(**{info.name: _below(info)})


@pytest.mark.parametrize("info", [i for i in BOUNDED if i.name in
                                  {"warmup", "iter", "min_time", "max_time", "target_ci",
                                   "threads"}], ids=lambda info: info.name)
def test_the_runner_rejects_what_the_spec_rejects(info: SettingInfo) -> None:
    with pytest.raises(ValueError):
        RunnerConfig(backend="m:C", **{RUNNER_NAMES.get(info.name, info.name): _below(info)})


def test_the_runner_defaults_are_the_settings_defaults() -> None:
    config = RunnerConfig(backend="m:C")
    for name in ("warmup", "iter", "min_time", "max_time", "target_ci", "threads", "profile_ops"):
        assert getattr(config, RUNNER_NAMES.get(name, name)) == getattr(TestSettings(), name)


def test_overrides_replace_only_what_is_given() -> None:
    test = TestCase("t", iter=7, repeat=2)
    changed = TestOverrides(iter=3, warmup=None).apply(test)
    assert (changed.iter, changed.repeat, changed.warmup) == (3, 2, test.warmup)
    assert TestOverrides().apply(test) is test
    assert TestOverrides(iter=3) == TestOverrides(iter=3, threads=None)


def test_an_unknown_override_is_a_usage_error_listing_the_settings() -> None:
    assert check_settings({"iters": 3}) == [
        f"'iters' is not a test setting (known: {', '.join(i.name for i in settings_info())})"]
    with pytest.raises(UsageError, match="'iters' is not a test setting"):
        TestOverrides(iters=3)


def test_cli_rejects_an_out_of_bounds_option_with_exit_code_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "benchlab", "run", str(_spec(tmp_path)),
                           "--iter", "0", "--dry-run"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: iter must be at least 1 (got 0)"


def test_cli_help_shows_the_settings_description() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert "Fresh processes per job. Spec default: 1." in result.output


def test_every_setting_is_documented_with_its_default() -> None:
    rows = dict(re.findall(r"^\| `(\w+)`[^|]*\| ([^|]*) \|", DOCS.read_text(), re.M))
    for info in settings_info():
        assert info.name in rows, f"docs/specs.md does not list {info.name}"
        written = rows[info.name].strip().strip("`").split("`")[0].strip()
        expected = "none" if info.default is None else str(info.default).lower()
        if isinstance(info.default, float):
            expected = f"{info.default:g}"
        assert written == expected, f"docs/specs.md: {info.name} default {written!r}"


def test_test_case_carries_every_setting() -> None:
    names = {f.name for f in fields(TestCase)}
    assert {info.name for info in settings_info()} <= names
