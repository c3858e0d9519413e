"""``python -m benchlab.exporting.job '<json job>'``: export one model to many formats at once.

Runs in its own process so that benchlab's main process never imports torch, and a crash in a
toolchain fails one export instead of the sweep. The job::

    {"name": "convnet", "entry": "module:factory" | null, "onnx_resource_path": "/abs.onnx" | null,
     "task": "classification", "input_shapes": [[1, 3, 128, 128]], "input_dtypes": ["float32"],
     "formats": ["torchscript", "onnx", ...], "out_dir": "/abs/dir", "seed": 0}

The last stdout line is one JSON object (everything the toolchains print goes to stderr)::

    {"files": {file_key: abs_path}, "failed": {format: "ExcType: message"},
     "metadata": {"params", "flops", "task", "input_shapes", "input_dtypes", "output_shapes"},
     "seconds": {format: float}}

Each format is exported in its own ``try``: one failing exporter never loses the others (a
crash of native code still takes the whole process down). The exit status is 0 whenever the
model itself could be built and run, 1 when it could not, 2 for a malformed job; the reason
is on stderr. Torch models also get ``reference`` (``NAME.reference.npz``): the example
inputs and the fp32 eager outputs, the inputs every format was exported from. Inputs are the
module's ``make_example_inputs(seed)`` when it has one, else seeded standard-normal floats and
integers in [0, 100); the int8 formats calibrate on those of seeds ``seed .. seed+7``.
Empty ``input_shapes``/``input_dtypes`` fall back to the module's ``example_shapes`` /
``example_dtypes`` (or, for ONNX, the graph's inputs).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.errors import ModelBuildError
from benchlab.frameworks.common import GENERATION_TASK
from benchlab.exporting.reasons import failure_reason
from benchlab.exporting import exporters
from benchlab.exporting.formats import EXPORT_PROGRESS_PREFIX, FORMATS
from benchlab.exporting.context import ExportContext

__all__ = ["CALIBRATION_SAMPLES", "ModelBuildError", "failure_reason", "random_inputs", "run_job",
           "stdout_to_stderr"]

#: Input sets in a reference file: the first is the one timed, all are compared.
REFERENCE_SETS = 8
#: Seeded input sets the int8 formats calibrate on (the reference inputs are the first).
CALIBRATION_SAMPLES = 8
_REQUIRED = ("name", "task", "formats", "out_dir")
_ORT_TYPES = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16"}


def random_inputs(
    shapes: Sequence[Sequence[int]], dtypes: Sequence[str], seed: int
) -> tuple[np.ndarray, ...]:
    """Standard-normal floats and integers in [0, 100) (token-id-like), from one seeded rng."""
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, dtype in zip(shapes, dtypes, strict=True):
        kind = np.dtype(dtype).kind
        if kind == "f":
            arrays.append(rng.standard_normal(tuple(shape)).astype(dtype))
        elif kind == "b":
            arrays.append(rng.integers(0, 2, tuple(shape)).astype(bool))
        else:
            arrays.append(rng.integers(0, 100, tuple(shape)).astype(dtype))
    return tuple(arrays)


def data_sets(path: str | Path, shapes: Sequence[Sequence[int]]) -> list[tuple[np.ndarray, ...]]:
    """The input sets of a user's ``.npz``: one array per input, in the model's input order,
    each stacking the sets along a new first axis (``N × shape``; ``N × shape[1:]`` is taken
    for a batch of one too). Raises :class:`ModelBuildError` naming what does not fit."""
    try:
        with np.load(path) as archive:
            arrays = [archive[name] for name in archive.files]
    except (OSError, ValueError) as error:
        raise ModelBuildError(f"cannot read input data {path}: {failure_reason(error)}") from None
    if len(arrays) != len(shapes):
        raise ModelBuildError(f"input data {path} holds {len(arrays)} array(s); the model "
                              f"takes {len(shapes)} input(s) {[list(s) for s in shapes]}")
    sets: list[tuple[np.ndarray, ...]] = []
    count = min(len(a) for a in arrays) if arrays else 0
    for k in range(count):
        one = []
        for array, shape in zip(arrays, shapes, strict=True):
            for candidate in (array[k], array[k:k + 1]):
                if list(candidate.shape) == list(shape):
                    one.append(np.ascontiguousarray(candidate))
                    break
            else:
                raise ModelBuildError(
                    f"input data {path}: arrays of shape {list(array.shape)} hold no sets of "
                    f"the input shape {list(shape)} (give N x {list(shape)})")
        sets.append(tuple(one))
    if not sets:
        raise ModelBuildError(f"input data {path} holds no input sets")
    return sets


def _as_numpy(values: Any) -> tuple[np.ndarray, ...]:
    items = values if isinstance(values, (tuple, list)) else (values,)
    return tuple(v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v) for v in items)


def _build_module(entry: str) -> Any:
    """Build the model of ``module:factory`` (or ``file.py:factory``) as the runner does.

    Any failure is a :class:`ModelBuildError`: without a model there is nothing to export.
    """
    from benchlab.frameworks.pytorch.backend import build_from_entry

    try:
        return build_from_entry(entry)
    except Exception as error:
        raise ModelBuildError(f"cannot build {entry}: {failure_reason(error)}") from error


def _torch_context(job: dict[str, Any], out_dir: Path) -> tuple[ExportContext, dict[str, Any]]:
    """Build the torch model, its seeded inputs, metadata and the reference file."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from benchlab.runner.accuracy import save_reference, to_arrays

    seed = int(job.get("seed", 0))
    torch.manual_seed(seed)
    if job["task"] == GENERATION_TASK:
        from benchlab.exporting.generative import decoder_context

        return decoder_context(job, out_dir, _build_module)
    module = _build_module(job["entry"])
    shapes = job.get("input_shapes") or getattr(module, "example_shapes", None)
    if not shapes:
        raise ModelBuildError(f"{job['entry']}: no input_shapes in the job or on the module")
    dtypes = job.get("input_dtypes") or getattr(module, "example_dtypes", None) or [
        "float32" for _ in shapes
    ]
    make = getattr(module, "make_example_inputs", None)
    given = data_sets(job["data"], shapes) if job.get("data") else None

    def inputs(s: int) -> tuple[np.ndarray, ...]:
        return _as_numpy(make(s)) if make is not None else random_inputs(shapes, dtypes, s)

    # The user's data, when given, is both: calibration takes its first sets, accuracy every
    # set up to REFERENCE_SETS (a user with little data has no held-out sets to spare).
    calibration = (given[:CALIBRATION_SAMPLES] if given is not None
                   else [inputs(seed + i) for i in range(CALIBRATION_SAMPLES)])
    args = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in calibration[0])
    names = [f"input{i}" for i in range(len(args))]
    try:
        flops: int | None
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            raw = module(*args)
        flops = int(counter.get_total_flops())
    except Exception:  # the counter trips on some ops; the forward may not
        flops = None
        try:
            with torch.no_grad():
                raw = module(*args)
        except Exception as error:
            raise ModelBuildError(f"{job['entry']} fails on its example inputs: "
                                  f"{failure_reason(error)}") from error
    outputs = to_arrays(raw)
    # More input sets, apart from the calibration data, so that accuracy (top-1 agreement
    # above all) rests on several samples, none of which the int8 formats calibrated on.
    more = []
    for k in range(1, REFERENCE_SETS):
        if given is not None and k >= len(given):
            break
        extra = given[k] if given is not None else inputs(seed + 1000 + k)
        with torch.no_grad():
            more.append((dict(zip(names, extra, strict=True)), to_arrays(
                module(*(torch.from_numpy(np.ascontiguousarray(a)) for a in extra)))))
    reference = out_dir / f"{job['name']}.reference.npz"
    save_reference(reference, dict(zip(names, calibration[0], strict=True)), outputs, job["task"],
                   more=more)
    metadata = {
        "params": int(sum(p.numel() for p in module.parameters())),
        "flops": flops,
        "task": job["task"],
        "input_shapes": [list(a.shape) for a in calibration[0]],
        "input_dtypes": [str(a.dtype) for a in calibration[0]],
        "output_shapes": [list(o.shape) for o in outputs],
        "inputs": "data" if given is not None else "random",
    }
    context = ExportContext(
        name=job["name"], out_dir=out_dir, module=module, args=args, input_names=names,
        calibration=calibration, reference=reference,
    )
    return context, metadata


def _onnx_context(job: dict[str, Any], out_dir: Path) -> tuple[ExportContext, dict[str, Any]]:
    """Open the ONNX-only model, make seeded inputs for it and read its metadata."""
    import onnxruntime as ort

    from benchlab.runner.accuracy import save_reference
    from benchlab.exporting.onnx_stats import onnx_params_and_flops

    source = Path(job["onnx_resource_path"])
    seed = int(job.get("seed", 0))
    try:
        session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    except Exception as error:
        raise ModelBuildError(f"cannot load {source}: {failure_reason(error)}") from error
    names = [i.name for i in session.get_inputs()]
    shapes = job.get("input_shapes") or [i.shape for i in session.get_inputs()]
    if any(not isinstance(d, int) for s in shapes for d in s):
        raise ModelBuildError(f"{source} has symbolic input dims {shapes}; give its input "
                              "shapes (--input 1x3x224x224, a spec's inputs, inputs= in Python)")
    # ORT names element types "tensor(float)", "tensor(int64)"...; numpy says float32, int64.
    dtypes = job.get("input_dtypes") or [
        _ORT_TYPES.get(i.type, i.type[len("tensor("):-1]) for i in session.get_inputs()
    ]
    given = data_sets(job["data"], shapes) if job.get("data") else None
    calibration = (given[:CALIBRATION_SAMPLES] if given is not None
                   else [random_inputs(shapes, dtypes, seed + i)
                         for i in range(CALIBRATION_SAMPLES)])
    try:
        outputs = [np.asarray(o) for o in
                   session.run(None, dict(zip(names, calibration[0], strict=True)))]
    except Exception as error:
        raise ModelBuildError(f"{source} fails on inputs {shapes} {dtypes}: "
                              f"{failure_reason(error)}") from error
    output_shapes = [list(o.shape) for o in outputs]
    # ONNX Runtime's fp32 outputs of the file itself are the reference: what its int8 copy and
    # the other runtimes are checked against (on sets apart from the calibration data).
    more = []
    for k in range(1, REFERENCE_SETS):
        if given is not None and k >= len(given):
            break
        extra = given[k] if given is not None else random_inputs(shapes, dtypes, seed + 1000 + k)
        feed = dict(zip(names, extra, strict=True))
        more.append((feed, [np.asarray(o) for o in session.run(None, feed)]))
    reference = out_dir / f"{job['name']}.reference.npz"
    save_reference(reference, dict(zip(names, calibration[0], strict=True)), outputs,
                   job["task"], more=more)
    try:
        params, flops = onnx_params_and_flops(source, shapes)
    except Exception:  # the counts are informative; the export goes on
        params, flops = None, None
    metadata = {
        "params": params, "flops": flops, "task": job["task"],
        "input_shapes": [list(s) for s in shapes], "input_dtypes": list(dtypes),
        "output_shapes": output_shapes, "inputs": "data" if job.get("data") else "random",
    }
    context = ExportContext(
        name=job["name"], out_dir=out_dir, input_names=names, calibration=calibration,
        onnx_source=source, reference=reference,
    )
    return context, metadata


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Export one model to every format of ``job``; the result object of the module docstring.

    Raises :class:`ModelBuildError` when the model cannot be built, and ``ValueError`` for a
    malformed job; any exporter's failure is reported under ``"failed"`` instead.
    """
    missing = [k for k in _REQUIRED if k not in job]
    if missing or (job.get("entry") is None) == (job.get("onnx_resource_path") is None):
        raise ValueError(f"bad job: missing {missing}" if missing else
                         "bad job: give exactly one of 'entry' and 'onnx_resource_path'")
    out_dir = Path(job["out_dir"]).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    if job.get("entry"):
        context, metadata = _torch_context(job, out_dir)
    else:
        context, metadata = _onnx_context(job, out_dir)
    files: dict[str, str] = {}
    if context.reference is not None:
        files["reference"] = str(context.reference)
    files.update({key: str(path) for key, path in context.extra_files.items()})
    failed: dict[str, str] = {}
    seconds: dict[str, float] = {}
    wanted = list(dict.fromkeys(job["formats"]))
    for fmt in [f for f in wanted if f not in FORMATS]:
        failed[fmt] = f"ValueError: unknown format {fmt!r}; known: {', '.join(FORMATS)}"
    for fmt, spec in FORMATS.items():
        if fmt not in wanted:
            continue
        before = set(out_dir.iterdir())
        start, cpu = time.perf_counter(), time.process_time()
        _event({"format": fmt, "event": "start"})
        try:
            written = getattr(exporters, spec.exporter)(context)
            files.update({key: str(path) for key, path in written.items()})
        except Exception as error:  # report it and go on with the next format
            failed[fmt] = failure_reason(error)
            # The whole error for the log the parent keeps; the report has one line.
            print(f"{fmt} failed:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            # A half-written file must not pass for an export; the fp32 ONNX file made on
            # the way may still serve the formats after this one.
            for path in set(out_dir.iterdir()) - before - {context.onnx_if_made()}:
                if path.is_file():
                    path.unlink()
        seconds[fmt] = round(time.perf_counter() - start, 3)
        # CPU time too: a paused export's wall time holds the measurements it waited for.
        _event({"format": fmt, "event": "failed" if fmt in failed else "done",
                "seconds": seconds[fmt], "cpu_seconds": round(time.process_time() - cpu, 3)})
    context.remove_byproducts(keep=set(files.values()))
    return {"files": files, "failed": failed, "metadata": metadata, "seconds": seconds}


def _event(event: dict[str, Any]) -> None:
    print(EXPORT_PROGRESS_PREFIX + json.dumps(event), file=sys.stderr, flush=True)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at stderr, so C++ toolchains' prints cannot follow our JSON."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def main(argv: list[str]) -> int:
    """Run the job in ``argv[0]`` (JSON); print the result as the last stdout line."""
    if not argv:
        print("usage: python -m benchlab.exporting.job '<json job>'", file=sys.stderr)
        return 2
    try:
        with stdout_to_stderr():
            result = run_job(json.loads(argv[0]))
    except (ValueError, ModelBuildError) as error:
        print(f"benchlab.exporting.job: {error}", file=sys.stderr)
        return 2 if isinstance(error, ValueError) else 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
