"""A run that names no framework takes every installed one: a framework that cannot run this
kind of model at all (an LLM library given a classifier, LiteRT given a text generator) is one
summary line, not a "skipped" line per model, unless the user named it (issue 56 §5).

The specs here name model files no framework reads, so a run plans no job and starts no
process: the planner's skips are all there is to see.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import benchlab
from benchlab.cli.commands import app
from benchlab.frameworks.common import is_generative
from benchlab.harness.planner import FORWARD_PASS, TEXT_GENERATOR, plan, skip_summary
from benchlab.plugins import FRAMEWORK_GROUP, available_names, load_framework
from benchlab.spec.types import BenchmarkSpec, FileRef, FrameworkConfig, ModelDef, TestCase
from benchlab.targets.host import HostTarget

GENERATORS_ONLY = "runs text generators only"


def _generators_only() -> list[str]:
    """The registered frameworks that run text generators only (installed or not)."""
    return sorted(name for name in available_names(FRAMEWORK_GROUP)
                  if getattr(load_framework(name), "generative_only", False))


def _spec(tmp_path: Path, files: dict[str, str], **spec: object) -> BenchmarkSpec:
    refs = {key: FileRef(key=key, location=location, base_dir=tmp_path, sha256="0" * 64)
            for key, location in files.items()}
    model = ModelDef(name="blob", format="custom", files=refs)
    return BenchmarkSpec(path=tmp_path / "s.json", model=model,
                         tests=(TestCase(identifier="t"),), **spec)  # type: ignore[arg-type]


def _spec_file(tmp_path: Path) -> Path:
    """A spec whose one model file no framework reads, and no frameworks of its own."""
    (tmp_path / "w.bin").write_bytes(b"x")
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "model": {"name": "blob", "format": "custom",
                  "files": {"weights": {"location": "w.bin", "md5": None}}},
        "tests": [{"identifier": "t"}]}))
    return path


def test_the_default_frameworks_say_generators_only_once(tmp_path: Path) -> None:
    only = _generators_only()
    assert only, "no framework runs text generators only: nothing to test"
    found = plan([_spec(tmp_path, {"weights": "w.bin"})], HostTarget(), device="here")
    # Every combination is still in the plan, marked as unasked and unfit.
    unfit = {s.framework for s in found.skipped if s.unfit == FORWARD_PASS}
    assert unfit == set(only)
    assert all(not s.named and not s.shown for s in found.skipped if s.unfit)
    # What a report lists: the other frameworks' own reasons, no "generators only" line...
    shown = [s for s in found.skipped if s.shown]
    assert shown and not [s for s in shown if GENERATORS_ONLY in s.reason]
    # ...and one line naming them all.
    assert skip_summary(found.skipped) == (
        f"{len(only)} frameworks run text generators only: {', '.join(only)} "
        "(name one with -f to see why)",)


@pytest.mark.parametrize("how", ["frameworks", "spec"])
def test_a_framework_the_user_named_keeps_its_reason(tmp_path: Path, how: str) -> None:
    named = [FrameworkConfig("llamacpp", {}), FrameworkConfig("onnxruntime", {})]
    if how == "frameworks":  # -f, or frameworks= in the API
        found = plan([_spec(tmp_path, {"weights": "w.bin"})], HostTarget(), frameworks=named,
                     device="here")
    else:  # the spec's own frameworks list
        found = plan([_spec(tmp_path, {"weights": "w.bin"}, frameworks=tuple(named))],
                     HostTarget(), device="here")
    reasons = {s.framework: s.reason for s in found.skipped if s.shown}
    assert reasons["llamacpp"] == "llamacpp runs text generators only"
    assert "onnxruntime" in reasons and skip_summary(found.skipped) == ()


def test_a_text_generator_leaves_out_a_runtime_without_a_generative_backend(
        tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"gguf": "m.gguf"})
    assert is_generative(spec.model)
    found = plan([spec], HostTarget(), device="here")
    unfit = sorted({s.framework for s in found.skipped if s.unfit == TEXT_GENERATOR})
    assert "tflite" in unfit  # LiteRT has no generative backend here
    assert not [s for s in found.skipped if s.shown and s.framework in unfit]
    (line,) = skip_summary(found.skipped)
    assert "no text generator backend" in line and "tflite" in line
    named = plan([spec], HostTarget(), frameworks=[FrameworkConfig("tflite", {})],
                 device="here")
    (skip,) = named.skipped
    assert skip.shown and skip.reason.startswith("tflite cannot generate text here")


def test_results_keep_every_skip_and_show_the_named_ones(tmp_path: Path) -> None:
    results = benchlab.run(_spec_file(tmp_path), db=tmp_path / "r.db",
                           cache_dir=tmp_path / "cache")
    assert not results.items
    every = dict(results.skipped)
    for name in _generators_only():  # the full list is there for whoever asks
        assert every[f"blob @ {name}"] == f"{name} runs text generators only"
    assert not [r for _, r in results.skipped_shown if GENERATORS_ONLY in r]
    assert len(results.skipped_shown) == len(results.skipped) - len(_generators_only())
    (line,) = results.skipped_summary
    assert line.startswith(f"{len(_generators_only())} frameworks run text generators only")


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.output


def test_the_cli_prints_one_line_for_frameworks_nobody_named(tmp_path: Path) -> None:
    spec, report = _spec_file(tmp_path), tmp_path / "r.html"
    out = _cli("run", str(spec), "--db", str(tmp_path / "r.db"), "-q", "--html", str(report),
               "--cache-dir", str(tmp_path / "cache"))
    only = _generators_only()
    assert GENERATORS_ONLY not in out.replace("frameworks run text generators only", "")
    for name in only:
        assert f"skipped blob @ {name}" not in out
    assert f"{len(only)} frameworks run text generators only: {', '.join(only)}" in out
    assert "skipped blob @ onnxruntime: no .onnx file" in out  # other reasons stay
    html = report.read_text()
    assert "frameworks run text generators only" in html
    assert "blob @ llamacpp" not in html and "blob @ onnxruntime" in html
    planned = json.loads(_cli("run", str(spec), "--dry-run"))
    assert not [s for s in planned["skipped"] if GENERATORS_ONLY in s["reason"]]
    assert planned["skipped_summary"] == list(
        skip_summary(plan([_spec(tmp_path, {"weights": "w.bin"})], HostTarget(),
                          device="here").skipped))


def test_the_cli_keeps_the_reason_of_a_framework_named_with_f(tmp_path: Path) -> None:
    out = _cli("run", str(_spec_file(tmp_path)), "--db", str(tmp_path / "r.db"), "-q",
               "-f", "llamacpp,onnxruntime", "--cache-dir", str(tmp_path / "cache"))
    assert "skipped blob @ llamacpp: llamacpp runs text generators only" in out
    assert "frameworks run text generators only" not in out
