"""An exported model as a spec: its files in the cache, the default test (or the user's), its
inputs — what the harness plans jobs from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from benchlab.spec.artifacts import ArtifactCache
from benchlab.exporting.session import ModelExport
from benchlab.frameworks.common import GENERATION_TASK
from benchlab.schema.generation import DEFAULT_GENERATION, Generation
from benchlab.spec.types import BenchmarkSpec, FileRef, InputDef, ModelDef, TestCase

__all__ = ["DEFAULT_GENERATIVE_TEST", "DEFAULT_TEST", "generative_tests", "spec_of"]

# Defaults of the zoo's test: fresh processes of at least 30 iterations and 0.3 s each. A
# default run races them (benchlab.stats.race): five each, the fewest with which the lab's flags
# found a known 12% slowdown every time and flagged no identical run (with three they missed it
# in 3 of 5 runs, and a race that stopped clear losers at three missed it in 3 of 3:
# docs/performance.md §11), and more where the answer is still open. Longer processes (1 s) did
# not narrow the spread when measured side by side with these (docs/statistics.md).
DEFAULT_TEST = TestCase(identifier="default", warmup=5, iter=30, min_time=0.3, repeat=5)
# A generative zoo model's test: P = 128, G = 64 at depth 0 (docs/generative.md); each
# iteration is a whole generation, so fewer of them, and one warm-up generation keeps the
# cold start (first_inference) out of TTFT.
DEFAULT_GENERATIVE_TEST = TestCase(identifier=f"generate[{DEFAULT_GENERATION.label}]",
                                   warmup=1, iter=5, min_time=0.0, repeat=5,
                                   generate=DEFAULT_GENERATION)


def generative_tests(test: TestCase, generations: Sequence[Generation] = ()
                     ) -> tuple[TestCase, ...]:
    """One copy of a generative ``test`` per workload of ``generations`` (default: the
    test's own, else :data:`~benchlab.schema.generation.DEFAULT_GENERATION`)."""
    return tuple(replace(test, identifier=f"generate[{g.label}]", generate=g)
                 for g in (generations or (test.generate or DEFAULT_GENERATION,)))


def spec_of(export: ModelExport, cache: ArtifactCache, test: TestCase | None = None, *,
            generations: Sequence[Generation] = (),
            own_tests: Sequence[TestCase] = ()) -> BenchmarkSpec:
    """The spec of an exported model: its files in the cache, ``test`` (default
    :data:`DEFAULT_TEST`) with the model's inputs. A text generator gets one test per
    workload of ``generations`` (default: :data:`DEFAULT_GENERATIVE_TEST`'s). ``own_tests``
    (a user's spec's own) replace them all."""
    model = export.model
    generative = model.task == GENERATION_TASK
    test = test or (DEFAULT_GENERATIVE_TEST if generative else DEFAULT_TEST)
    if generative:
        tests = generative_tests(test, generations)
    else:
        tests = (test,)
    tests = tuple(own_tests) or tests
    files = {
        key: FileRef(key=key, location=str(path), base_dir=cache.root, sha256=sha,
                     filename=path.name)
        for key, (path, sha) in export.files.items()
    }
    metadata = {"task": model.task, "pretrained": model.pretrained, "zoo": not model.given,
                **{k: v for k, v in export.metadata.items()
                   if k in ("params", "flops", "inputs")}}
    if model.given:
        metadata["given"] = model.given
    if export.failures:
        metadata["export_failures"] = dict(export.failures)
    # An ONNX file given without shapes: the ones the export read from the graph.
    shapes = model.input_shapes or tuple(tuple(s) for s in export.metadata.get("input_shapes", ()))
    dtypes = model.input_dtypes or tuple(export.metadata.get("input_dtypes", ())) or tuple(
        "float32" for _ in shapes)
    inputs = tuple(InputDef(f"input{i}", s, d) for i, (s, d) in enumerate(zip(shapes, dtypes)))
    return BenchmarkSpec(
        path=Path(model.given or f"zoo:{model.name}"),
        model=ModelDef(name=model.name, format="pytorch" if model.entry else "onnx",
                       files=files, entry=model.entry, description=model.description,
                       metadata=metadata),
        tests=tuple(replace(t, inputs=inputs) if inputs else t for t in tests),
        elsewhere=export.elsewhere,
    )
