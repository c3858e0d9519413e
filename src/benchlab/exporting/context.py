"""The export context: what every exporter of one export job reads (the model, its example
inputs, where to write), and the steps several formats share, made once per job.

Its own module, so that the exporters of :mod:`benchlab.exporting.exporters` and the
generative ones (:mod:`benchlab.exporting.generative`, ``gguf_export``, ``pte_decoder``) all
build on it without importing one another.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ExportContext", "NeedsTorchModel"]


class NeedsTorchModel(RuntimeError):
    """The format is made from a torch module and the job has only an ONNX file."""


@dataclass
class ExportContext:
    """What every exporter of one job reads: the model, its example inputs, where to write.

    ``module`` is the eval-mode ``torch.nn.Module`` (None for ONNX-only models, whose file is
    ``onnx_source``). ``args`` are the example inputs as torch tensors (the ones the reference
    was computed from); ``calibration`` holds further seeded input tuples (numpy) for the
    int8 formats, the reference inputs first. ``reference`` is the reference ``.npz`` (the
    module's fp32 outputs, or ONNX Runtime's for an ONNX-only model).
    """

    name: str
    out_dir: Path
    module: Any = None
    args: tuple[Any, ...] = ()
    input_names: list[str] = field(default_factory=list)
    calibration: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    onnx_source: Path | None = None
    reference: Path | None = None
    #: Files written with the context itself, by file key (a text generator's tokenizer).
    extra_files: dict[str, Path] = field(default_factory=dict)
    #: A text generator's ``transformers`` model itself (``module`` is the cache graph built
    #: on it), for the exporters that start from a Hugging Face folder (the GenAI builders).
    causal_lm: Any = None
    _memo: dict[str, tuple[bool, Any]] = field(default_factory=dict, repr=False)

    def path(self, suffix: str) -> Path:
        """The output file ``NAME<suffix>`` in the job's directory."""
        return self.out_dir / f"{self.name}{suffix}"

    def torch_module(self) -> Any:
        """The torch module; raises :class:`NeedsTorchModel` for ONNX-only models."""
        if self.module is None:
            raise NeedsTorchModel("this format is made from a torch model; the job has only ONNX")
        return self.module

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        """``make()`` the first time, its memoised result (or exception) afterwards."""
        if key not in self._memo:
            try:
                self._memo[key] = (True, make())
            except Exception as error:
                self._memo[key] = (False, error)
        ok, value = self._memo[key]
        if not ok:
            raise value
        return value

    def exported_program(self) -> Any:
        """``torch.export.export`` of the module at the example inputs, made once per job."""

        def make() -> Any:
            import torch

            return torch.export.export(self.torch_module(), self.args)

        return self.once("exported_program", make)

    def fp32_onnx(self) -> Path:
        """The fp32 ONNX file ``NAME.onnx`` (exported or copied once per job)."""
        return self.once("onnx", self._write_onnx)

    def onnx_if_made(self) -> Path | None:
        """The fp32 ONNX file if a format of this job has made it already, else None."""
        ok, value = self._memo.get("onnx", (False, None))
        return value if ok else None

    def remove_byproducts(self, keep: set[str]) -> None:
        """Delete the fp32 ONNX file when it was made only for other formats (int8, OpenVINO)."""
        made = self.onnx_if_made()
        if made is not None and str(made) not in keep:
            made.unlink(missing_ok=True)

    def _write_onnx(self) -> Path:
        target = self.path(".onnx")
        if self.onnx_source is not None:
            shutil.copyfile(self.onnx_source, target)
            return target
        import torch

        torch.onnx.export(
            self.torch_module(), self.args, str(target), dynamo=True, external_data=False,
            input_names=self.input_names,
        )
        return target
