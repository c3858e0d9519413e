"""The built-in model zoo: models defined in code, exported once into the artifact cache.

The zoo is benchlab's default workload: ``benchlab run`` with no spec measures
:data:`DEFAULT_MODELS` on every installed framework. Exported files are content-addressed in
the artifact cache and recorded in a small index, so a second run exports nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from benchlab.artifacts import ArtifactCache
from benchlab.environment import package_versions
from benchlab.errors import InfrastructureError, UsageError
from benchlab.spec.types import BenchmarkSpec, FileRef, InputDef, ModelDef, TestCase

__all__ = ["DEFAULT_MODELS", "ZOO", "ZooModel", "zoo_specs"]

# Bump when a model's definition or export changes, so cached exports are not reused.
ZOO_VERSION = "2"


@dataclass(frozen=True, slots=True)
class ZooModel:
    """A model of the zoo: its factory in :mod:`benchlab.zoo.models` and its input shapes."""

    name: str
    description: str
    input_shapes: tuple[tuple[int, ...], ...]

    @property
    def entry(self) -> str:
        """The ``module:factory`` that builds the eager model."""
        return f"benchlab.zoo.models:{self.name}"


ZOO: dict[str, ZooModel] = {
    m.name: m
    for m in (
        ZooModel("mlp", "3-layer perceptron 512-1024-1024-10, batch 16", ((16, 512),)),
        ZooModel("convnet", "5-block CNN classifier, 128x128 RGB", ((1, 3, 128, 128),)),
        ZooModel("transformer", "2 transformer encoder blocks, 128 tokens x 128", ((1, 128, 128),)),
    )
}
DEFAULT_MODELS = ("mlp", "convnet", "transformer")

# Defaults of the zoo's test: three fresh processes of at least 30 iterations and 0.3 s each.
DEFAULT_TEST = TestCase(identifier="default", warmup=5, iter=30, min_time=0.3, repeat=3)


def _index_path(cache: ArtifactCache) -> Path:
    return cache.root / "zoo-index.json"


def _read_index(cache: ArtifactCache) -> dict[str, dict[str, dict[str, str]]]:
    try:
        return json.loads(_index_path(cache).read_text())
    except (OSError, ValueError):
        return {}


def _write_index(cache: ArtifactCache, index: dict[str, dict[str, dict[str, str]]]) -> None:
    path = _index_path(cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".zoo-index-")
    with os.fdopen(fd, "w") as handle:
        json.dump(index, handle, indent=1, sort_keys=True)
    os.replace(tmp, path)


def zoo_specs(
    names: tuple[str, ...] | list[str], cache: ArtifactCache, test: TestCase | None = None
) -> list[BenchmarkSpec]:
    """Specs for zoo models, exporting (once) the files their frameworks need."""
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        raise UsageError(f"unknown zoo model(s) {', '.join(unknown)}; known: {', '.join(ZOO)}")
    torch_version = package_versions(("torch",))["torch"]
    if torch_version is None:
        raise UsageError("the model zoo needs PyTorch: pip install 'benchlab[pytorch]'")
    index = _read_index(cache)
    keys = {n: f"{n}:{ZOO_VERSION}:torch=={torch_version}" for n in names}
    missing = [n for n in names if not _cached(index.get(keys[n]))]
    if missing:
        with tempfile.TemporaryDirectory(prefix="benchlab-zoo-") as tmp:
            proc = subprocess.run(
                [sys.executable, "-m", "benchlab.zoo.export", tmp, *missing],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if proc.returncode != 0:
                tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
                raise InfrastructureError(f"exporting zoo models failed:\n{tail}")
            exported = json.loads(proc.stdout.strip().splitlines()[-1])
            for name, files in exported.items():
                entry = {}
                for fmt, path in files.items():
                    cached, sha = cache.put(Path(path))
                    entry[fmt] = {"path": str(cached), "sha256": sha}
                index[keys[name]] = entry
        _write_index(cache, index)
    base = test or DEFAULT_TEST
    specs = []
    for name in names:
        model = ZOO[name]
        files = {
            fmt: FileRef(
                key=fmt,
                location=info["path"],
                base_dir=cache.root,
                sha256=info["sha256"],
                filename=Path(info["path"]).name,
            )
            for fmt, info in index[keys[name]].items()
        }
        inputs = tuple(InputDef(f"input{i}", s) for i, s in enumerate(model.input_shapes))
        specs.append(
            BenchmarkSpec(
                path=Path(f"zoo:{name}"),
                model=ModelDef(
                    name=name,
                    format="pytorch",
                    files=files,
                    entry=model.entry,
                    description=model.description,
                ),
                tests=(_with_inputs(base, inputs),),
            )
        )
    return specs


def _cached(entry: dict[str, dict[str, str]] | None) -> bool:
    return bool(entry) and all(Path(f["path"]).is_file() for f in entry.values())


def _with_inputs(test: TestCase, inputs: tuple[InputDef, ...]) -> TestCase:
    return replace(test, inputs=inputs)
