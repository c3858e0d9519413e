"""What a user gives as their model, read without importing any runtime.

* ``mynet.py:build`` or ``pkg.module:factory``: a factory that builds a ``torch.nn.Module``;
* a ``torch.nn.Module`` object (the Python API);
* a Hugging Face model folder (``save_pretrained``), read offline;
* ``model.onnx``: an ONNX file, exported further (int8, OpenVINO) like the zoo's;
* a file a runtime reads as it is: ``.tflite``, ``.pte``, OpenVINO IR ``.xml`` (its ``.bin``
  beside it), TorchScript ``.pt``/``.pth``/``.ptl``, ``torch.export`` ``.pt2``, ``.gguf``.

Input shapes come as ``[name=]1x3x224x224[:dtype]`` (:func:`parse_input`) or as example
tensors (anything with ``shape`` and ``dtype``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.errors import UsageError
from benchlab.spec.types import InputDef

__all__ = ["READY_FILES", "ModelGiven", "input_defs", "parse_input", "parse_model"]

#: File suffix → (model file key, what reads it, the bytes a real one holds at offset 0 or 4,
#: the framework that runs it).
READY_FILES: dict[str, tuple[str, str, tuple[int, bytes] | None, str]] = {
    ".tflite": ("tflite", "LiteRT", (4, b"TFL3"), "tflite"),
    ".pte": ("pte", "ExecuTorch", (4, b"ET"), "executorch"),
    ".xml": ("openvino", "OpenVINO", None, "openvino"),
    ".pt": ("torchscript", "PyTorch (TorchScript)", (0, b"PK\x03\x04"), "pytorch"),
    ".pth": ("torchscript", "PyTorch (TorchScript)", (0, b"PK\x03\x04"), "pytorch"),
    ".ptl": ("torchscript", "PyTorch (TorchScript)", (0, b"PK\x03\x04"), "pytorch"),
    ".pt2": ("pt2", "PyTorch (torch.export)", (0, b"PK\x03\x04"), "pytorch"),
    ".gguf": ("gguf", "llama.cpp", (0, b"GGUF"), "llamacpp"),
}
_DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8",
           "bool")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


@dataclass(frozen=True, slots=True)
class ModelGiven:
    """One model as the user gave it. ``kind``: ``factory``, ``module``, ``huggingface``,
    ``onnx`` or ``file``; ``name`` names it in tables (the file's stem, the factory's module or the
    module's class); ``path`` is the file (a factory's, when it is a file)."""

    kind: str
    text: str
    name: str
    path: Path | None = None
    module: Any = field(default=None, compare=False, repr=False)


def _check_magic(path: Path, suffix: str) -> None:
    _, reader, magic, _ = READY_FILES[suffix]
    if magic is None:
        head = path.read_bytes()[:256].lstrip()
        if not head.startswith(b"<"):
            raise UsageError(f"{path}: not an OpenVINO IR (an .xml file starts with '<')")
        if not path.with_suffix(".bin").is_file():
            raise UsageError(f"{path}: its weights {path.with_suffix('.bin').name} are not "
                             "beside it")
        return
    offset, expected = magic
    with open(path, "rb") as handle:
        head = handle.read(offset + len(expected))
    if head[offset:] != expected:
        raise UsageError(f"{path}: not a {reader} file (it does not start as a {suffix} "
                         "file does)")


def parse_model(given: Any) -> ModelGiven:
    """What ``given`` is, checked: a missing file, an unknown suffix or a file that is not
    the model its suffix says raise :class:`~benchlab.errors.UsageError` naming it."""
    if not isinstance(given, (str, Path)):
        if not all(hasattr(given, a) for a in ("forward", "state_dict", "eval")):
            raise UsageError(f"a model must be a torch.nn.Module, a file or a "
                             f"'file.py:factory', not {type(given).__name__}")
        return ModelGiven("module", type(given).__name__, type(given).__name__, module=given)
    text = str(given)
    target, sep, func = text.rpartition(":")
    if sep and func.isidentifier() and not Path(text).exists():
        if target.endswith(".py"):
            path = Path(target).expanduser().resolve()
            if not path.is_file():
                raise UsageError(f"model {text}: no file {target}")
            return ModelGiven("factory", f"{path}:{func}", path.stem, path)
        if all(part.isidentifier() for part in target.split(".")):
            return ModelGiven("factory", text, target.rpartition(".")[2])
        raise UsageError(f"model {text}: give 'file.py:factory' or 'pkg.module:factory'")
    path = Path(text).expanduser().resolve()
    if not path.exists():
        raise UsageError(f"model {text}: no such file (give a model file, a 'file.py:factory' "
                         "or a 'pkg.module:factory')")
    if path.is_dir():
        from benchlab.usermodels.huggingface import read_folder

        read_folder(path)  # a folder without config.json or weights says so here
        return ModelGiven("huggingface", str(path), path.name, path)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        return ModelGiven("onnx", str(path), path.stem, path)
    if suffix not in READY_FILES:
        raise UsageError(f"model {text}: unknown kind of file {suffix or '(no suffix)'}; "
                         f"known: .onnx, {', '.join(READY_FILES)}, or a 'file.py:factory'")
    _check_magic(path, suffix)
    return ModelGiven("file", str(path), path.stem, path)


def parse_input(text: str, index: int = 0) -> InputDef:
    """``[name=]1x3x224x224[:dtype]`` (dtype default float32) as an input definition."""
    name, sep, rest = text.partition("=")
    if not sep:
        name, rest = f"input{index}", text
    dims, _, dtype = rest.partition(":")
    dtype = dtype or "float32"
    if not _NAME.fullmatch(name):
        raise UsageError(f"--input {text}: bad input name {name!r}")
    if dtype not in _DTYPES:
        raise UsageError(f"--input {text}: unknown dtype {dtype!r}; known: {', '.join(_DTYPES)}")
    try:
        shape = tuple(int(d) for d in dims.lower().split("x"))
    except ValueError:
        raise UsageError(f"--input {text}: the shape is whole numbers joined by 'x', "
                         "like 1x3x224x224") from None
    if not shape or any(d <= 0 for d in shape):
        raise UsageError(f"--input {text}: every dimension must be positive")
    return InputDef(name, shape, dtype)


def input_defs(inputs: Sequence[Any] | None) -> tuple[InputDef, ...]:
    """Input definitions from ``--input`` strings, :class:`InputDef` values or example
    tensors (their shape and dtype)."""
    found = []
    for index, item in enumerate(inputs or ()):
        if isinstance(item, InputDef):
            found.append(item)
        elif isinstance(item, str):
            found.append(parse_input(item, index))
        elif hasattr(item, "shape") and hasattr(item, "dtype"):
            dtype = str(item.dtype).removeprefix("torch.")
            found.append(InputDef(f"input{index}", tuple(int(d) for d in item.shape),
                                  {"float": "float32", "long": "int64"}.get(dtype, dtype)))
        else:
            raise UsageError(f"an input is a shape string ('1x3x224x224:float32') or an "
                             f"example tensor, not {type(item).__name__}")
    return tuple(found)
