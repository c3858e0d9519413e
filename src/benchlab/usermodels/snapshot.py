"""A user's PyTorch module, frozen once: its weights pickled with its code, and its fingerprint.

Imports torch: it runs in the process that holds the module (``benchlab.run(model=module)``
from a notebook) or, for a factory (``mynet.py:build``, ``pkg.module:factory``), in its own
process through ``python -m benchlab.usermodels.snapshot '<json job>'``, so that benchlab's main
process never imports torch. The job::

    {"entry": "mynet.py:build" | null, "huggingface": "/abs/folder" | null, "out_dir": "/abs/dir",
     "input_shapes": [[1, 3, 64, 64]] | null, "input_dtypes": ["float32"] | null}

The last stdout line is :func:`snapshot`'s report as JSON; exit 1 when the model cannot be
built or run on its inputs (the reason on stderr), 2 for a malformed job.

Why a snapshot: a factory may draw unseeded weights, and a notebook's module exists nowhere
but in memory. Pickled once (cloudpickle: classes defined in ``__main__`` or in a file that is
not importable travel by value), the same weights serve PyTorch eager and every export, and
the reference outputs the exports are checked against are this module's.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.errors import ModelBuildError
from benchlab.exporting.reasons import failure_reason, users_code

__all__ = ["fingerprint_module", "inputs_of", "main", "snapshot"]

_SNAPSHOT_NAME = "model.snapshot.pt"


def _class_source(cls: type) -> bytes:
    """What defines ``cls``: the bytes of its file when that is the user's own code, its
    qualified name when it comes installed (its package's version pins it)."""
    name = f"{cls.__module__}:{cls.__qualname__}".encode()
    try:
        path = inspect.getsourcefile(cls)
    except (TypeError, OSError):
        path = None
    # Installed code is named, not hashed: its package's version pins it (and reading every
    # torch.nn class's file would cost a read per class per run).
    if path and not users_code(path):
        return name
    if path:
        try:
            return name + b"\0" + Path(path).read_bytes()
        except OSError:
            pass
    # Defined in a notebook or an interactive session: no file, but the class's own source
    # (or, failing that, its methods' bytecode) still changes when its code does.
    try:
        return name + b"\0" + inspect.getsource(cls).encode()
    except (TypeError, OSError):
        codes = [getattr(v, "__code__", None) for v in vars(cls).values()]
        return name + b"".join(c.co_code for c in codes if c is not None)


def fingerprint_module(module: Any, shapes: Sequence[Sequence[int]], dtypes: Sequence[str],
                       extra: bytes = b"") -> str:
    """A digest of what defines ``module``: every weight and buffer's bytes, the code of every
    class it is made of, its input shapes and dtypes, and ``extra`` (the factory's file)."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        value = tensor.detach().cpu().contiguous()
        digest.update(f"{name}|{value.dtype}|{tuple(value.shape)}".encode())
        digest.update(value.view(-1).view(torch.uint8).numpy().tobytes()
                      if value.numel() else b"")
    for cls in sorted({type(m) for m in module.modules()},
                      key=lambda c: f"{c.__module__}.{c.__qualname__}"):
        digest.update(_class_source(cls) + b"\0")
    digest.update(repr([list(s) for s in shapes]).encode() + repr(list(dtypes)).encode())
    digest.update(extra)
    return digest.hexdigest()[:20]


def inputs_of(module: Any, shapes: Sequence[Sequence[int]] | None,
              dtypes: Sequence[str] | None) -> tuple[list[list[int]], list[str]]:
    """The input shapes and dtypes: those given, else the module's ``example_shapes`` /
    ``example_dtypes`` (the zoo's factory contract)."""
    shapes = [list(s) for s in (shapes or getattr(module, "example_shapes", None) or [])]
    if not shapes:
        raise ModelBuildError("no input shapes: give them (--input 1x3x224x224, a spec's "
                              "inputs, inputs= in Python) or set example_shapes on the module")
    dtypes = list(dtypes or getattr(module, "example_dtypes", None) or ["float32"] * len(shapes))
    if len(dtypes) != len(shapes):
        raise ModelBuildError(f"{len(shapes)} input shape(s) but {len(dtypes)} dtype(s)")
    return shapes, dtypes


def _task_of(outputs: Sequence[np.ndarray]) -> str:
    """``classification`` when the first output looks like logits (batch × classes), so that
    accuracy adds top-k agreement; else no task (error statistics only)."""
    first = outputs[0] if outputs else None
    return "classification" if first is not None and first.ndim == 2 and \
        first.shape[1] >= 2 and first.dtype.kind == "f" else ""


def snapshot(module: Any, out_dir: Path, shapes: Sequence[Sequence[int]] | None = None,
             dtypes: Sequence[str] | None = None, extra: bytes = b"") -> dict[str, Any]:
    """Check ``module`` runs on seeded inputs of its shapes, pickle it into ``out_dir`` and
    describe it: ``{"fingerprint", "snapshot", "params", "input_shapes", "input_dtypes",
    "task"}``. Raises :class:`ModelBuildError` when it cannot run on those inputs."""
    import cloudpickle
    import torch

    from benchlab.runner.accuracy import to_arrays
    from benchlab.exporting.job import random_inputs

    if not isinstance(module, torch.nn.Module):
        raise ModelBuildError(f"a model must be a torch.nn.Module, not {type(module).__name__}")
    module = module.eval()
    shapes, dtypes = inputs_of(module, shapes, dtypes)
    try:
        arrays = random_inputs(shapes, dtypes, 0)
    except TypeError as error:
        raise ModelBuildError(f"bad input dtype in {dtypes}: {error}") from None
    try:
        with torch.no_grad():
            outputs = to_arrays(module(*(torch.from_numpy(a) for a in arrays)))
    except Exception as error:
        raise ModelBuildError(f"the model fails on inputs {shapes} {dtypes}: "
                              f"{failure_reason(error)}") from error
    # Modules of the user's own files that are importable here may not be in the runner's
    # process: pickle their classes by value too.
    for cls in {type(m) for m in module.modules()}:
        owner = sys.modules.get(cls.__module__)
        if owner is not None and cls.__module__ != "__main__" and \
                users_code(getattr(owner, "__file__", None)):
            cloudpickle.register_pickle_by_value(owner)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / _SNAPSHOT_NAME
    torch.save(module, path, pickle_module=cloudpickle)
    return {"fingerprint": fingerprint_module(module, shapes, dtypes, extra),
            "snapshot": str(path), "params": int(sum(p.numel() for p in module.parameters())),
            "input_shapes": shapes, "input_dtypes": dtypes, "task": _task_of(outputs)}


def _entry_source(entry: str) -> bytes:
    """The factory's own file (for ``file.py:factory``): its helpers are part of the model."""
    target = entry.rpartition(":")[0]
    return Path(target).read_bytes() if target.endswith(".py") else entry.encode()


def main(argv: list[str]) -> int:
    """Build the job's factory (torch seeded with 0), snapshot it, print the report."""
    try:
        job = json.loads(argv[0]) if argv else None
        entry, folder = job.get("entry"), job.get("huggingface")  # type: ignore[union-attr]
        out_dir = Path(job["out_dir"])  # type: ignore[index]
        if (entry is None) == (folder is None):
            raise ValueError("give exactly one of entry and huggingface")
    except (ValueError, KeyError, TypeError, AttributeError):
        print("usage: python -m benchlab.usermodels.snapshot "
              "'{\"entry\": ..., \"out_dir\": ...}'", file=sys.stderr)
        return 2
    import torch

    from benchlab.frameworks.pytorch.backend import build_from_entry
    from benchlab.usermodels import huggingface
    from benchlab.exporting.job import stdout_to_stderr

    try:
        with stdout_to_stderr():
            torch.manual_seed(0)  # an unseeded factory still draws the same weights each run
            try:
                module = build_from_entry(entry) if entry else huggingface.build(folder)
            except Exception as error:
                raise ModelBuildError(f"the {'factory' if entry else 'folder'} raised "
                                      f"{failure_reason(error)}") from error
            extra = _entry_source(entry) if entry else (Path(folder) / "config.json").read_bytes()
            report = snapshot(module, out_dir, job.get("input_shapes"), job.get("input_dtypes"),
                              extra)
    except ModelBuildError as error:
        print(str(error), file=sys.stderr)
        return 1
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
