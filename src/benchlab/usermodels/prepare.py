"""A user's models as the sweep takes them: export definitions for the export pipeline (a
PyTorch module or factory, an ONNX file) and specs for the files that run as they are.

A PyTorch model is frozen first (:mod:`benchlab.usermodels.snapshot`: a factory in its own
process, a module object in this one, which holds torch already). The snapshot is kept in the
artifact cache under the model's fingerprint (its weights' bytes, its code, its input
shapes), beside a one-function loader file that is the model's ``entry``: PyTorch eager and
every exporter build the same module from it, and a second run finds the same fingerprint,
the same entry, and so the same export cache key — nothing is exported again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchlab.spec.artifacts import ArtifactCache, sha256_of
from benchlab.errors import ModelBuildError, UsageError
from benchlab.frameworks.common import GENERATION_TASK
from benchlab.spec.types import (
    BenchmarkSpec,
    FileRef,
    FrameworkConfig,
    InputDef,
    ModelDef,
    TestCase,
)
from benchlab.usermodels.given import READY_FILES, ModelGiven, parse_model
from benchlab.usermodels.huggingface import read_folder
from benchlab.exporting.job import data_sets
from benchlab.exporting.definition import ModelDefinition
from benchlab.exporting.formats import DECODER_FORMATS, DECODER_SOURCES, DEFAULT_FORMATS

__all__ = ["SNAPSHOT_TIMEOUT_S", "TORCH_KINDS", "UserModels", "entry_only",
           "prepare_models"]

#: What is built as a PyTorch module and frozen before export.
TORCH_KINDS = ("factory", "module", "huggingface")
#: How long building and freezing a factory's model may take (a pretrained one loads weights).
SNAPSHOT_TIMEOUT_S = 600.0
_LOADER = '''"""benchlab's snapshot of {given}: eager PyTorch and every export build this module."""

import torch

SNAPSHOT = {snapshot!r}


def build():
    return torch.load(SNAPSHOT, weights_only=False).eval()
'''


@dataclass(frozen=True, slots=True)
class UserModels:
    """The user's models: ``exports`` go through the export pipeline, ``ready`` run as
    they are. ``tests`` (when a spec gave the model) replace the default test, by model
    name."""

    exports: tuple[ModelDefinition, ...] = ()
    ready: tuple[BenchmarkSpec, ...] = ()
    tests: dict[str, tuple[TestCase, ...]] | None = None


def entry_only(spec: BenchmarkSpec) -> bool:
    """A spec naming a PyTorch factory and no model file: its model goes through the export
    pipeline like any other, so every runtime gets it."""
    return bool(spec.model.entry) and not [k for k in spec.model.files if k != "reference"]


def _stored_snapshot(cache: ArtifactCache, report: dict[str, Any], name: str) -> str:
    """Keep a fresh snapshot under its fingerprint (the first one stays: pickles of the same
    weights differ byte for byte) and return the loader's ``file.py:build`` entry."""
    folder = cache.root / "user-models" / report["fingerprint"]
    snapshot, loader = folder / "model.snapshot.pt", folder / f"{name}_snapshot.py"
    folder.mkdir(parents=True, exist_ok=True)
    with cache.exclusive(f"user-model-{report['fingerprint']}"):
        if not snapshot.is_file():
            os.replace(report["snapshot"], snapshot)
        text = _LOADER.format(given=name, snapshot=str(snapshot))
        if not loader.is_file() or loader.read_text() != text:
            loader.write_text(text)
    return f"{loader}:build"


def _snapshot_factory(given: ModelGiven, inputs: Sequence[InputDef],
                      out_dir: Path) -> dict[str, Any]:
    folder = given.kind == "huggingface"
    job = {"entry": None if folder else given.text,
           "huggingface": given.text if folder else None, "out_dir": str(out_dir),
           "input_shapes": [list(i.shape) for i in inputs] or None,
           "input_dtypes": [i.dtype for i in inputs] or None}
    return _run_checked([sys.executable, "-m", "benchlab.usermodels.snapshot", json.dumps(job)],
                        given)


def _run_checked(argv: list[str], given: ModelGiven) -> dict[str, Any]:
    """Run a process that builds or loads the model; its last stdout line (JSON), or a
    :class:`ModelBuildError` with the last line it wrote on stderr (its reason)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SNAPSHOT_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        raise ModelBuildError(f"model {given.text}: building it took over "
                              f"{SNAPSHOT_TIMEOUT_S:.0f} s") from None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if done.returncode != 0:
        why = lines[-1].removeprefix("benchlab.exporting.job: ") if lines else \
            f"exited {done.returncode}"
        raise ModelBuildError(f"model {given.text}: {why}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _snapshot_module(given: ModelGiven, inputs: Sequence[InputDef],
                     out_dir: Path) -> dict[str, Any]:
    from benchlab.usermodels.snapshot import snapshot

    return snapshot(given.module, out_dir, [list(i.shape) for i in inputs] or None,
                    [i.dtype for i in inputs] or None)


def _torch_model(given: ModelGiven, cache: ArtifactCache, inputs: Sequence[InputDef],
                 data: Path | None) -> ModelDefinition:
    generative = given.kind == "huggingface" and given.path is not None and \
        read_folder(given.path).generative
    # Beside the cache, so that keeping the snapshot is a rename, not a copy.
    cache.root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="benchlab-snapshot-", dir=cache.root) as tmp:
        make = _snapshot_module if given.kind == "module" else _snapshot_factory
        report = make(given, inputs, Path(tmp))
        if data is not None:  # the sets must fit the inputs: said now, not by every export
            data_sets(data, report["input_shapes"])
        entry = _stored_snapshot(cache, report, given.name)
    if generative:  # the zoo's decoders' path: the prompt and cache are the runner's
        return ModelDefinition(
            name=given.name, description=f"your text generator ({given.text})",
            task=GENERATION_TASK, input_shapes=(), entry=entry, formats=DECODER_FORMATS,
            sources=(entry.rpartition(":")[0], *DECODER_SOURCES), given=given.text)
    return ModelDefinition(
        name=given.name, description=f"your model ({given.text})", task=report["task"],
        input_shapes=tuple(tuple(s) for s in report["input_shapes"]),
        input_dtypes=tuple(report["input_dtypes"]), entry=entry, formats=DEFAULT_FORMATS,
        given=given.text, data=str(data) if data else None)


def _onnx_model(given: ModelGiven, inputs: Sequence[InputDef],
                data: Path | None) -> ModelDefinition:
    """An ONNX file, checked first: an export job with no format loads it with ONNX Runtime
    and runs it on its inputs, so a file that is not a model, or shapes that do not fit, stop
    the sweep before anything runs."""
    job = {"name": given.name, "entry": None, "onnx_resource_path": str(given.path), "task": "",
           "input_shapes": [list(i.shape) for i in inputs],
           "input_dtypes": [i.dtype for i in inputs], "formats": [], "seed": 0,
           "data": str(data) if data else None}
    with tempfile.TemporaryDirectory(prefix="benchlab-onnx-check-") as tmp:
        job["out_dir"] = tmp
        report = _run_checked([sys.executable, "-m", "benchlab.exporting.job", json.dumps(job)],
                              given)
    found = report.get("metadata", {})
    return ModelDefinition(
        name=given.name, description=f"your model ({given.text})", task="",
        input_shapes=tuple(tuple(s) for s in found.get("input_shapes", ())),
        input_dtypes=tuple(found.get("input_dtypes", ())),
        onnx_resource=str(given.path), formats=DEFAULT_FORMATS, given=given.text,
        data=str(data) if data else None)


def _ready_spec(given: ModelGiven, inputs: Sequence[InputDef], test: TestCase,
                generative: tuple[TestCase, ...]) -> BenchmarkSpec:
    assert given.path is not None
    key, _, _, framework = READY_FILES[given.path.suffix.lower()]
    paths = {key: given.path}
    if key == "openvino":
        paths["openvino_bin"] = given.path.with_suffix(".bin")
    files = {k: FileRef(key=k, location=str(p), base_dir=p.parent, sha256=sha256_of(p),
                        filename=p.name) for k, p in paths.items()}
    generates = key == "gguf"
    metadata = {"task": GENERATION_TASK if generates else "", "given": given.text}
    # The runtime that reads the file is its framework: no "no .pte file" line for the others
    # (a sweep naming frameworks still chooses for itself).
    tests = generative if generates else (replace(test, inputs=tuple(inputs)),)
    return BenchmarkSpec(path=given.path, model=ModelDef(
        name=given.name, format=key, files=files, description=f"your model ({given.text})",
        metadata=metadata), tests=tests, frameworks=(FrameworkConfig(framework),))


def prepare_models(
    given: Sequence[Any],
    cache: ArtifactCache,
    *,
    inputs: Sequence[InputDef] = (),
    data: Path | None = None,
    test: TestCase,
    generative: Sequence[TestCase],
    specs: Sequence[BenchmarkSpec] = (),
    progress: Callable[[str], None] | None = None,
) -> UserModels:
    """The user's models (``given``: what :func:`~benchlab.usermodels.given.parse_model`
    reads, plus ``specs`` naming a factory and no file), ready for the sweep. ``test``
    is a forward-pass file's test, ``generative`` a GGUF file's tests.

    Raises :class:`~benchlab.errors.UsageError` (exit 2) naming the model and what is wrong
    when one cannot be read, built or run on its inputs.
    """
    if data is not None and not Path(data).is_file():
        raise UsageError(f"input data {data}: no such file")
    parsed = [parse_model(g) for g in given]
    for spec in specs:
        parsed.append(ModelGiven("factory", spec.model.entry or "", spec.model.name))
    # The same model in two forms (mynet.onnx, mynet.tflite) is told apart by its suffix.
    stems = [p.name for p in parsed]
    parsed = [replace(p, name=p.path.name) if p.path is not None and p.kind != "factory"
              and stems.count(p.name) > 1 else p for p in parsed]
    names = [p.name for p in parsed]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"two models are named {', '.join(twice)}: rename a file")
    exports, ready = [], []
    spec_inputs = {spec.model.name: spec.tests[0].inputs if spec.tests else ()
                   for spec in specs}
    for item in parsed:
        if progress is not None and item.kind in TORCH_KINDS:
            progress(f"{item.name}: building and freezing your model ({item.text})")
        own = spec_inputs.get(item.name) or tuple(inputs)
        if item.kind in TORCH_KINDS:
            exports.append(_torch_model(item, cache, own, data))
        elif item.kind == "onnx":
            exports.append(_onnx_model(item, own, data))
        else:
            ready.append(_ready_spec(item, own, test, tuple(generative)))
    return UserModels(exports=tuple(exports), ready=tuple(ready),
                      tests={spec.model.name: spec.tests for spec in specs} or None)
