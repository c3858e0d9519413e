"""Tensors as raw files with a manifest: how inputs reach, and outputs leave, a device
without Python.

A manifest (``outputs.json``, ``inputs.json``) is one JSON object,
``{"tensors": [{"name", "dtype", "shape", "file"}, ...]}``; each file holds the tensor's
elements in C order, little-endian, with no header: what a C++ program writes with one
``fwrite`` and what ExecuTorch's ``executor_runner --output_file`` writes (one
``BASE-<i>.bin`` per output, its shape and type known from the model's metadata instead).
An entry may also give an ``offset``: its tensor then starts there in a file that holds
several, back to back (one file to pull for all of a program's outputs, however many).
Reading checks every file's size against its dtype and shape (with offsets: that the file
reaches the tensor's end), so a truncated pull or an output of another model is an error
that names the file, never a tensor of garbage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["TensorFile", "decode_raw", "read_manifest", "read_tensors", "write_tensors"]

#: The element types the protocol carries (numpy names; little-endian on the wire).
DTYPES = ("float32", "float16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool")


@dataclass(frozen=True, slots=True)
class TensorFile:
    """One tensor of a manifest: its name, element type, shape and file (relative)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str
    #: Where the tensor starts in its file (None: the file holds it alone).
    offset: int | None = None

    @property
    def nbytes(self) -> int:
        """The size its file must have."""
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def _entry(raw: object, where: str) -> TensorFile:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a tensor entry must be an object, not {raw!r}")
    try:
        name, dtype, file = str(raw["name"]), str(raw["dtype"]), str(raw["file"])
        shape = tuple(int(d) for d in raw["shape"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: a tensor entry needs name, dtype, shape and file "
                         f"({exc})") from None
    if dtype not in DTYPES:
        raise ValueError(f"{where}: tensor {name!r} has dtype {dtype!r}; the protocol carries "
                         f"{', '.join(DTYPES)}")
    if any(d < 0 for d in shape) or "/" in file or file.startswith("."):
        raise ValueError(f"{where}: tensor {name!r} has shape {list(shape)} and file {file!r}; "
                         "sizes are non-negative and files sit beside the manifest")
    offset = raw.get("offset")
    if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int)
                               or offset < 0):
        raise ValueError(f"{where}: tensor {name!r} has offset {offset!r}; an offset is a "
                         "non-negative byte count")
    return TensorFile(name, dtype, shape, file, offset)


def read_manifest(path: Path) -> list[TensorFile]:
    """The tensors a manifest lists; ``ValueError`` naming the file for a bad one."""
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a tensor manifest ({exc})") from None
    tensors = raw.get("tensors") if isinstance(raw, dict) else None
    if not isinstance(tensors, list):
        raise ValueError(f"{path}: a tensor manifest is {{\"tensors\": [...]}}")
    return [_entry(item, str(path)) for item in tensors]


def decode_raw(path: Path, dtype: str, shape: Sequence[int]) -> np.ndarray:
    """One headerless tensor file as an array of ``dtype`` and ``shape``; ``ValueError`` when
    its size does not fit them (the message names the file and both sizes)."""
    expected = TensorFile(Path(path).name, dtype, tuple(int(d) for d in shape), Path(path).name)
    size = Path(path).stat().st_size
    if size != expected.nbytes:
        raise ValueError(f"{path} holds {size} bytes; a {dtype} tensor of shape "
                         f"{list(expected.shape)} is {expected.nbytes} bytes")
    data = np.fromfile(path, dtype=np.dtype(dtype).newbyteorder("<"))
    return data.reshape(expected.shape).astype(np.dtype(dtype), copy=False)


def read_tensors(manifest: Path, files: Mapping[str, Path] | None = None) -> dict[str, np.ndarray]:
    """Every tensor of ``manifest`` by name. Its files are looked up in ``files`` (name →
    local path, as pulled from a device) or beside the manifest."""
    arrays: dict[str, np.ndarray] = {}
    for tensor in read_manifest(manifest):
        local = (files or {}).get(tensor.file, Path(manifest).parent / tensor.file)
        if not Path(local).is_file():
            raise ValueError(f"{manifest} lists {tensor.file}, which did not come back")
        if tensor.offset is None:
            arrays[tensor.name] = decode_raw(Path(local), tensor.dtype, tensor.shape)
            continue
        size, end = Path(local).stat().st_size, tensor.offset + tensor.nbytes
        if size < end:
            raise ValueError(f"{local} holds {size} bytes; tensor {tensor.name!r} "
                             f"({tensor.dtype}, shape {list(tensor.shape)}) ends at byte {end}")
        count = tensor.nbytes // np.dtype(tensor.dtype).itemsize
        data = np.fromfile(local, dtype=np.dtype(tensor.dtype).newbyteorder("<"), count=count,
                           offset=tensor.offset)
        arrays[tensor.name] = data.reshape(tensor.shape).astype(np.dtype(tensor.dtype),
                                                                copy=False)
    return arrays


def write_tensors(folder: Path, arrays: Mapping[str, np.ndarray], *,
                  manifest: str = "inputs.json") -> Path:
    """Write ``arrays`` as ``<name>.bin`` files and their manifest into ``folder``; the
    manifest's path."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, array in arrays.items():
        value = np.ascontiguousarray(array)
        dtype = value.dtype.name
        if dtype not in DTYPES:
            raise ValueError(f"tensor {name!r} has dtype {dtype}; the protocol carries "
                             f"{', '.join(DTYPES)}")
        file = f"{name}.bin"
        value.astype(value.dtype.newbyteorder("<"), copy=False).tofile(folder / file)
        entries.append({"name": name, "dtype": dtype, "shape": list(value.shape), "file": file})
    path = folder / manifest
    path.write_text(json.dumps({"tensors": entries}, indent=1) + "\n")
    return path
