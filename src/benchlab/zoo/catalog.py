"""What the zoo holds: one :class:`ZooModel` per model, and the export formats it can take.

This module imports nothing heavy: benchlab reads the catalog (``benchlab zoo list``) without
importing torch. Architectures live in :mod:`benchlab.zoo.archs`, exporters in
:mod:`benchlab.zoo.export`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ALL_FORMATS",
    "DEFAULT_FORMATS",
    "FORMAT_FILES",
    "ZooModel",
]

#: Every export format the zoo knows → the model file keys it writes (see docs/zoo.md).
FORMAT_FILES: dict[str, tuple[str, ...]] = {
    "torchscript": ("torchscript",),
    "pt2": ("pt2",),
    "aoti": ("aoti",),
    "onnx": ("onnx",),
    "onnx_int8": ("onnx_int8",),
    "tflite": ("tflite",),
    "pte_xnnpack": ("pte_xnnpack",),
    "pte_xnnpack_int8": ("pte_xnnpack_int8",),
    "pte_portable": ("pte_portable",),
    "openvino": ("openvino", "openvino_bin"),
}
ALL_FORMATS = tuple(FORMAT_FILES)
#: What a zoo model exports to unless it says otherwise. AOTInductor (about a minute of C++
#: compilation per model) and ExecuTorch's portable kernels (seconds per inference on big
#: models) are opt-in per model or via ``benchlab zoo export --formats``.
DEFAULT_FORMATS = (
    "torchscript", "pt2", "onnx", "onnx_int8", "tflite", "pte_xnnpack", "pte_xnnpack_int8",
    "openvino",
)


@dataclass(frozen=True, slots=True)
class ZooModel:
    """A model of the zoo.

    ``entry`` (``module:factory``) builds an eval-mode ``torch.nn.Module`` with seeded or
    pretrained weights whose ``example_shapes`` (and optional ``example_dtypes``) attributes
    describe its inputs. ONNX-only models have no entry and name an ``onnx_resource``
    (``package:relative/path.onnx``) shipped inside an installed package instead.
    ``sources`` are the modules whose source code defines the model: their bytes are part of
    the export cache key, so a changed definition is a cache miss. ``requires`` lists the
    distributions the model needs (pretrained weights packages), checked before export.
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

    @property
    def dtypes(self) -> tuple[str, ...]:
        """One dtype per input (``float32`` unless the model says otherwise)."""
        return self.input_dtypes or tuple("float32" for _ in self.input_shapes)
