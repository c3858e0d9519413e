"""The zoo's export cache: a second export is a hit, a changed model definition is a miss, and
a format a converter rejects is remembered with its reason."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import pytest

import benchlab.zoo as zoo
from benchlab.exporting.session import ModelExport
from benchlab.spec.artifacts import ArtifactCache
from benchlab.exporting.cache import ExportIndex, model_fingerprint
from benchlab.exporting.definition import ModelDefinition

_MODEL_SOURCE = textwrap.dedent('''
    import torch
    from torch import nn


    def tiny():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, {width}), nn.ReLU(), nn.Linear({width}, 3)).eval()
        model.example_shapes = [[2, 8]]
        return model
''')


@pytest.fixture()
def user_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModelDefinition, Path]:
    """A zoo entry whose definition lives in a module of the test's own."""
    source = tmp_path / "zoo_user_model.py"
    source.write_text(_MODEL_SOURCE.format(width=16))
    monkeypatch.syspath_prepend(str(tmp_path))
    # The export subprocess imports the module too.
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + ":" + ":".join(sys.path))
    model = ModelDefinition(name="user_tiny", description="test model", task="regression",
                     input_shapes=((2, 8),), entry="zoo_user_model:tiny",
                     sources=("zoo_user_model",), formats=("onnx", "torchscript"))
    monkeypatch.setitem(zoo.ZOO, model.name, model)
    return model, source


def test_fingerprint_follows_the_definition(user_model: tuple[ModelDefinition, Path]) -> None:
    model, source = user_model
    before = model_fingerprint(model)
    assert model_fingerprint(model) == before
    source.write_text(_MODEL_SOURCE.format(width=32))
    assert model_fingerprint(model) != before


def test_fingerprint_follows_the_versions_of_the_packages_a_model_requires(
        user_model: tuple[ModelDefinition, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from dataclasses import replace

    model, _ = user_model
    # A module of its distribution's name (transformers), one of another name (yaml, from
    # PyYAML: found by reading every package's files) and one no package installs.
    needs = replace(model, requires=("transformers", "yaml.loader", "not_installed_here"))
    assert model_fingerprint(needs) == model_fingerprint(needs) != model_fingerprint(model)
    installed = importlib.metadata.version
    for bumped in ("transformers", "PyYAML"):
        before = model_fingerprint(needs)
        monkeypatch.setattr(importlib.metadata, "version",
                            lambda name, b=bumped: "9.9" if name == b else installed(name))
        assert model_fingerprint(needs) != before, bumped
        monkeypatch.setattr(importlib.metadata, "version", installed)


@pytest.mark.slow
def test_second_export_is_a_hit_and_a_changed_definition_a_miss(
    user_model: tuple[ModelDefinition, Path], tmp_path: Path
) -> None:
    model, source = user_model
    cache = ArtifactCache(tmp_path / "cache")
    first = zoo.export_models([model.name], cache)[0]
    assert set(first.exported) == {"onnx", "torchscript", "reference"}
    assert {"onnx", "torchscript", "reference"} <= set(first.files)
    assert first.metadata.get("params") == 8 * 16 + 16 + 16 * 3 + 3

    again = zoo.export_models([model.name], cache)[0]
    assert again.exported == ()  # nothing re-exported
    assert again.files == first.files

    source.write_text(_MODEL_SOURCE.format(width=32))
    changed = zoo.export_models([model.name], cache)[0]
    assert set(changed.exported) == {"onnx", "torchscript", "reference"}
    assert changed.files["onnx"][1] != first.files["onnx"][1]
    assert changed.metadata.get("params") == 8 * 32 + 32 + 32 * 3 + 3

    specs = zoo.zoo_specs([model.name], cache)
    assert specs[0].model.metadata["params"] == 8 * 32 + 32 + 32 * 3 + 3
    assert set(specs[0].model.files) >= {"onnx", "torchscript", "reference"}


@pytest.mark.slow
def test_a_failed_format_is_remembered_with_its_reason(
    user_model: tuple[ModelDefinition, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, source = user_model
    # Data-dependent control flow: tracing to TorchScript works, torch.export rejects it.
    source.write_text(_MODEL_SOURCE.format(width=16) + textwrap.dedent('''

        class Branchy(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x * 2
                return x - 1


        def branchy():
            model = Branchy().eval()
            model.example_shapes = [[2, 8]]
            return model
    '''))
    broken = ModelDefinition(name="user_branchy", description="t", task="regression",
                      input_shapes=((2, 8),), entry="zoo_user_model:branchy",
                      sources=("zoo_user_model",), formats=("pt2", "torchscript"))
    monkeypatch.setitem(zoo.ZOO, broken.name, broken)
    cache = ArtifactCache(tmp_path / "cache")
    first = zoo.export_models([broken.name], cache)[0]
    assert "pt2" in first.failures and "torchscript" in first.files
    again = zoo.export_models([broken.name], cache)[0]
    assert again.exported == () and again.failures["pt2"] == first.failures["pt2"]
    spec = zoo.zoo_specs([broken.name], cache)[0]
    assert "pt2" in spec.model.metadata["export_failures"]


@pytest.mark.slow
def test_a_damaged_index_or_cached_file_means_export_again_not_a_traceback(
    user_model: tuple[ModelDefinition, Path], tmp_path: Path
) -> None:
    import json

    model, _ = user_model
    cache = ArtifactCache(tmp_path / "cache")
    # TorchScript: the cheapest of the model's formats to export again (the cache's handling
    # is the same for every format).
    first = zoo.export_models([model.name], cache, formats=["torchscript"])[0]
    saved = Path(first.files["torchscript"][0])
    # A cached file whose bytes changed is exported again, not handed to a runtime.
    saved.write_bytes(b"not a torchscript file")
    again = zoo.export_models([model.name], cache, formats=["torchscript"])[0]
    assert "torchscript" in again.exported
    assert Path(again.files["torchscript"][0]).read_bytes() != b"not a torchscript file"
    # An index of the wrong shape, entry by entry and as a whole, counts as empty.
    index = cache.root / "zoo-index.json"
    data = json.loads(index.read_text())
    data["formats"] = {key: {"files": "garbage", "error": 3} for key in data["formats"]}
    data["metadata"] = {key: ["not", "a", "mapping"] for key in data["metadata"]}
    index.write_text(json.dumps(data))
    assert "torchscript" in zoo.export_models([model.name], cache,
                                              formats=["torchscript"])[0].exported
    keys = list(json.loads(index.read_text())["formats"])
    for garbage in ("[1, 2]", "{\"formats\": 7}", "\x00\x01 not json"):
        index.write_text(garbage)
        read = ExportIndex(cache)  # what the export below reads first
        assert all(read.get(key) is None for key in keys), garbage
    # ... and the export after it runs as on an empty cache (once: every garbage reads so).
    assert "torchscript" in zoo.export_models([model.name], cache,
                                              formats=["torchscript"])[0].exported


def test_two_indexes_of_one_cache_keep_each_others_entries(tmp_path: Path) -> None:
    """Two processes sharing a cache each read the index, record a format and save: the file
    ends with both, where a plain rewrite kept only the last one's."""
    from benchlab.exporting.cache import ExportIndex, FormatEntry

    cache = ArtifactCache(tmp_path / "cache")
    first, second = ExportIndex(cache), ExportIndex(cache)
    first.put("a|onnx", FormatEntry(error="first's"))
    second.put("b|onnx", FormatEntry(error="second's"))
    second.put_metadata("b", {"params": 2})
    first.save()
    second.save()
    merged = ExportIndex(cache)
    assert merged.get("a|onnx") == FormatEntry(error="first's")
    assert merged.get("b|onnx") == FormatEntry(error="second's")
    assert merged.metadata("b") == {"params": 2}
    # What an index recorded itself wins over the file; reload takes in the others' entries.
    first.put("b|onnx", FormatEntry(error="first's again"))
    first.reload()
    assert first.get("b|onnx") == FormatEntry(error="first's again")
    assert first.metadata("b") == {"params": 2}


@pytest.mark.slow
def test_two_exports_of_one_model_into_one_cache_export_it_once(
    user_model: tuple[ModelDefinition, Path], tmp_path: Path
) -> None:
    """Two runs sharing a cache ask for the same model at once: one exports it, the other
    waits for it and takes its files (the model's lock in the cache; threads here, processes
    in a parallel test run or two runs at once)."""
    import threading

    model, _ = user_model
    cache_dir = tmp_path / "cache"
    exports: list[ModelExport] = []
    progress: list[str] = []

    def export() -> None:
        exports.extend(zoo.export_models([model.name], ArtifactCache(cache_dir),
                                         formats=["onnx"], progress=progress.append))

    threads = [threading.Thread(target=export) for _ in range(2)]
    # Both plan the export before either may start it: the test holds the model's lock until
    # each has said it is exporting.
    with ArtifactCache(cache_dir).exclusive(f"zoo-export-{model_fingerprint(model)}"):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 120
        while sum("exporting 1 model" in line for line in progress) < 2:
            assert time.monotonic() < deadline, progress
            time.sleep(0.01)
    for thread in threads:
        thread.join(timeout=300)
    assert len(exports) == 2
    assert sorted(len(e.exported) for e in exports) == [0, 2]  # onnx and its reference
    assert exports[0].files == exports[1].files and "onnx" in exports[0].files
    assert any("exported meanwhile by another process" in line for line in progress)
