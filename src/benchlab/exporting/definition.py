"""What the export pipeline exports: :class:`ModelDefinition`, one per model, and where its
ONNX file is. Imports nothing heavy.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from benchlab.exporting.formats import DEFAULT_FORMATS

__all__ = ["ModelDefinition", "resolve_onnx_resource"]


@dataclass(frozen=True, slots=True)
class ModelDefinition:
    """A model to export: the zoo's (by name, :mod:`benchlab.zoo.registry`) or a user's
    (:mod:`benchlab.usermodels`), the one shape the export pipeline takes.

    ``entry`` (``module:factory``) builds an eval-mode ``torch.nn.Module`` with seeded or
    pretrained weights whose ``example_shapes`` (and optional ``example_dtypes``) attributes
    describe its inputs. ONNX-only models have no entry and name an ``onnx_resource``
    (``package:relative/path.onnx`` shipped inside an installed package, or the absolute path
    of a user's ONNX file) instead.
    ``sources`` are the modules whose source code defines the model: their bytes are part of
    the export cache key, so a changed definition is a cache miss. ``requires`` lists the
    distributions the model needs (pretrained weights packages), checked before export.
    A user's model (:mod:`benchlab.usermodels`) says what the user gave in ``given``; its
    ``data`` (an ``.npz`` of input sets) replaces seeded random inputs for calibration and
    accuracy.
    """

    name: str
    description: str
    task: str
    input_shapes: tuple[tuple[int, ...], ...]
    entry: str | None = None
    input_dtypes: tuple[str, ...] = ()
    onnx_resource: str | None = None
    sources: tuple[str, ...] = ()
    formats: tuple[str, ...] = DEFAULT_FORMATS
    requires: tuple[str, ...] = ()
    pretrained: bool = False
    tags: tuple[str, ...] = field(default=())
    given: str = ""
    data: str | None = None

    @property
    def dtypes(self) -> tuple[str, ...]:
        """One dtype per input (``float32`` unless the model says otherwise)."""
        return self.input_dtypes or tuple("float32" for _ in self.input_shapes)


def resolve_onnx_resource(resource: str) -> Path:
    """The file named by ``package:relative/path.onnx``, found without importing the package
    (or by an absolute path: a user's own ONNX file).

    Raises :class:`FileNotFoundError` when the package is not installed or lacks the file.
    """
    if Path(resource).is_absolute():
        if not Path(resource).is_file():
            raise FileNotFoundError(f"ONNX file {resource} does not exist")
        return Path(resource)
    package, sep, relative = resource.partition(":")
    if not sep or not package or not relative:
        raise FileNotFoundError(f"bad ONNX resource {resource!r}: expected 'package:path'")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError) as exc:  # a dotted name whose parent is missing
        raise FileNotFoundError(f"ONNX resource {resource!r}: {exc}") from exc
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not locations:
        raise FileNotFoundError(
            f"ONNX resource {resource!r}: package {package!r} is not installed"
        )
    for location in locations:
        path = Path(location, relative)
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"ONNX resource {resource!r}: {relative} is not in package {package!r} "
        f"(looked in {', '.join(locations)})"
    )
