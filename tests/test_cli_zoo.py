"""`benchlab zoo list | export | spec` through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchlab.cli.commands import app
from benchlab.spec import load_spec
from benchlab.zoo import DEFAULT_MODELS, ZOO


def test_zoo_list_names_every_model_and_marks_the_default_set() -> None:
    outcome = CliRunner().invoke(app, ["zoo", "list"])
    assert outcome.exit_code == 0, outcome.output
    for name in ZOO:
        assert name in outcome.output
    # Each model's set in its own column, never glued to its name (mlp + s read "mlps").
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip()
            for line in outcome.output.splitlines() if line.startswith("│")
            and line.split("│")[1].strip()}
    assert all(rows[name] == "default" for name in DEFAULT_MODELS)
    assert rows["mlp"] == "small" and "mlps" not in outcome.output


def test_zoo_export_rejects_an_unknown_format(tmp_path: Path) -> None:
    outcome = CliRunner().invoke(app, ["zoo", "export", "mlp", "--formats", "onnx,tarball",
                                       "--cache-dir", str(tmp_path)])
    assert outcome.exit_code != 0
    assert "tarball" in str(outcome.exception) or "tarball" in outcome.output


@pytest.mark.slow
def test_zoo_export_then_spec_gives_a_spec_the_loader_accepts(tmp_path: Path,
                                                              zoo_cache_dir: Path) -> None:
    runner = CliRunner()
    cache = ["--cache-dir", str(tmp_path / "cache")]
    # TorchScript, the cheapest format to export: what is shown is the export and the hit.
    exported = runner.invoke(app, ["zoo", "export", "mlp", "--formats", "torchscript", *cache])
    assert exported.exit_code == 0, exported.output
    assert "exported" in exported.output and "torchscript" in exported.output
    again = runner.invoke(app, ["zoo", "export", "mlp", "--formats", "torchscript", *cache])
    assert "cached" in again.output and "exported" not in again.output
    # `zoo spec` exports every format the model takes first: in the session's cache, where
    # they are (exporting them all again here would prove nothing more).
    spec_path = tmp_path / "mlp.json"
    written = runner.invoke(app, ["zoo", "spec", "mlp", "-o", str(spec_path),
                                  "--cache-dir", str(zoo_cache_dir)])
    assert written.exit_code == 0, written.output
    document = json.loads(spec_path.read_text())
    assert document["model"]["entry"] == "benchlab.zoo.models:mlp"
    spec = load_spec(spec_path)
    assert {"onnx", "torchscript", "reference"} <= set(spec.model.files)
    assert all(f.location.startswith(zoo_cache_dir.resolve().as_uri())
               for f in spec.model.files.values())
    assert spec.tests[0].inputs[0].shape == (16, 512)
