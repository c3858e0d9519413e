"""``python -m benchlab.zoo.export OUT_DIR NAME...``: write TorchScript and ONNX files.

Runs in its own process so that benchlab's main process never imports torch, and a crash in
an exporter fails one export instead of the sweep. Prints one JSON object on its last line:
``{name: {"torchscript": path, "onnx": path}}``.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

__all__ = ["export_models"]


def export_models(out_dir: Path, names: list[str]) -> dict[str, dict[str, str]]:
    """Export each zoo model to TorchScript (traced) and ONNX (single file) in ``out_dir``."""
    import torch

    from benchlab.zoo import models

    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, dict[str, str]] = {}
    for name in names:
        module = getattr(models, name)()
        args = tuple(torch.randn(*shape) for shape in module.example_shapes)
        names_in = [f"input{i}" for i in range(len(args))]
        ts_path = out_dir / f"{name}.pt"
        with torch.no_grad():
            torch.jit.trace(module, args).save(str(ts_path))
        onnx_path = out_dir / f"{name}.onnx"
        # The exporter narrates its progress on stdout; keep our last line parseable.
        with contextlib.redirect_stdout(io.StringIO()):
            torch.onnx.export(
                module, args, str(onnx_path), dynamo=True, external_data=False,
                input_names=names_in,
            )
        written[name] = {"torchscript": str(ts_path), "onnx": str(onnx_path)}
    return written


if __name__ == "__main__":
    result = export_models(Path(sys.argv[1]), sys.argv[2:])
    print(json.dumps(result))
