"""A backend's raw outputs, for users who evaluate accuracy with their own code.

:func:`outputs` runs one model on one framework configuration through the same runner process
a benchmark uses (same file, same options, same inputs) and returns the outputs as numpy
arrays next to the reference and the error statistics benchlab computes from them.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.artifacts import ArtifactCache, default_cache_dir
from benchlab.errors import InfrastructureError, UsageError
from benchlab.frameworks.base import JobContext, Unsupported
from benchlab.jobrun import fetch_files
from benchlab.frameworks.common import REFERENCE_KEY
from benchlab.plugins import load_framework
from benchlab.runner.accuracy import error_stats, load_reference, save_reference
from benchlab.spec.types import BenchmarkSpec, FrameworkConfig
from benchlab.zoo import ZOO, zoo_specs

__all__ = ["ModelOutputs", "outputs"]


@dataclass(frozen=True)
class ModelOutputs:
    """What one backend returned for one set of inputs.

    ``errors`` holds benchlab's statistics (``error_max_abs``, ``sqnr``...) against
    ``reference`` and is empty when there is no reference to compare with.
    """

    model: str
    framework: FrameworkConfig
    inputs: dict[str, np.ndarray]
    outputs: list[np.ndarray]
    reference: list[np.ndarray] | None = None
    errors: dict[str, float] = field(default_factory=dict)

    def as_torch(self) -> list[Any]:
        """The outputs as torch tensors (imports torch)."""
        import torch

        return [torch.from_numpy(np.ascontiguousarray(a)) for a in self.outputs]


def _spec(model: str | Path | BenchmarkSpec, cache: ArtifactCache) -> BenchmarkSpec:
    if isinstance(model, BenchmarkSpec):
        return model
    if isinstance(model, str) and model in ZOO:
        return zoo_specs([model], cache)[0]
    from benchlab.spec import load

    specs = load(Path(model))
    if not specs:
        raise UsageError(f"{model}: the spec holds no model")
    return specs[0]


def outputs(
    model: str | Path | BenchmarkSpec,
    framework: str | FrameworkConfig,
    *,
    inputs: Mapping[str, np.ndarray] | None = None,
    cache_dir: Path | None = None,
    timeout: float = 600.0,
) -> ModelOutputs:
    """Run ``model`` (a zoo name, a spec file or a loaded spec) once on ``framework``.

    ``framework`` is a name with options (``"onnxruntime:precision=int8"``) or a
    :class:`FrameworkConfig`. Without ``inputs`` the model's reference inputs are used (zoo
    models have them) or seeded random ones; with ``inputs`` nothing is compared unless the
    reference was made from the same inputs.
    """
    from benchlab.api import parse_framework

    cache = ArtifactCache(cache_dir or default_cache_dir())
    spec = _spec(model, cache)
    config = parse_framework(framework) if isinstance(framework, str) else framework
    adapter = load_framework(config.name)
    configs = adapter.configurations(spec.model, [config] if config.options else [])
    if isinstance(configs, Unsupported):
        raise UsageError(f"{spec.model.name} cannot run on {config.name}: {configs.reason}")
    chosen = configs[0]
    test = replace(spec.tests[0], warmup=0, iter=1, min_time=0.0, repeat=1, profile_ops=False,
                   target_ci=None, max_time=None)
    with tempfile.TemporaryDirectory(prefix="benchlab-outputs-") as tmp:
        files = {k: str(path) for k, path in fetch_files(spec, test, cache).items()}
        reference = None
        if REFERENCE_KEY in spec.model.files:
            reference = load_reference(files[f"files.{REFERENCE_KEY}"])
        if inputs is not None:
            given = os.path.join(tmp, "inputs.npz")
            same = reference is not None and list(inputs) == list(reference.inputs) and all(
                np.array_equal(np.asarray(inputs[k]), reference.inputs[k]) for k in inputs)
            save_reference(Path(given), inputs, reference.outputs if same and reference else [],
                           reference.task if reference else "")
            files[f"files.{REFERENCE_KEY}"] = given
            reference = load_reference(given)
        ctx = JobContext(spec=spec, test=test, config=chosen, workdir=tmp, python=_python(),
                         files=files, placeholders={})
        invocation = adapter.invocations(ctx)[-1]
        argv = list(invocation.argv)
        runner_config = json.loads(argv[-1])
        dump = os.path.join(tmp, "outputs.npz")
        runner_config["dump_outputs"] = dump
        argv[-1] = json.dumps(runner_config)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=tmp,
                              env={**os.environ, **invocation.env})
        if proc.returncode != 0 or not os.path.exists(dump):
            tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
            raise InfrastructureError(f"{config.name} failed on {spec.model.name}:\n{tail}")
        with np.load(dump) as archive:
            got = [archive[k] for k in sorted(archive.keys(), key=lambda k: int(k.split(".")[1]))]
        if reference is not None and reference.inputs:
            used = dict(reference.inputs)
        else:  # the runner's seeded inputs for repetition 0, made the same way here
            from benchlab.runner.config import InputConfig
            from benchlab.runner.loop import make_inputs

            used = make_inputs([InputConfig(name=i.name, shape=list(i.shape), dtype=i.dtype)
                                for i in test.inputs], 0)
    errors: dict[str, float] = {}
    expected = reference.outputs if reference is not None and reference.outputs else None
    if expected is not None:
        errors = error_stats(got, expected, reference.task if reference else "")
    return ModelOutputs(model=spec.model.name, framework=chosen, inputs=used, outputs=got,
                        reference=expected, errors=errors)


def _python() -> str:
    import sys

    return sys.executable
