"""ONNX Runtime int8 accuracy with 8-bit against 7-bit weights, per zoo model, on this CPU.

For each model the zoo's own export steps build the fp32 ONNX file, its reference outputs and
the calibration inputs; ``benchlab.exporting.quantize.quantize_onnx`` then writes the int8 file twice,
with ``reduce_range`` off (8-bit weights) and on (7-bit weights, the zoo's choice). Each file
runs in ONNX Runtime on every reference input set; the figure is the median SQNR (dB) against
the fp32 reference. On x86 CPUs without VNNI the 8-bit files can saturate (docs/reproducibility.md).

    python bench/int8_weights.py [--smoke] [--out FILE]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result

from benchlab.runner.accuracy import error_stats, load_reference
from benchlab.zoo import registry
from benchlab.exporting.job import _torch_context
from benchlab.exporting.quantize import quantize_onnx

NAME = "int8_weights"
MODELS = ("mlp", "convnet", "transformer", "mobilenet_v2", "efficientnet_lite0", "minilm")


def median_sqnr(model_name: str, out: Path) -> dict[str, float]:
    """Median SQNR over the reference sets, keyed ``8-bit`` and ``7-bit``."""
    import onnxruntime as ort

    model = registry.ZOO[model_name]
    job = {"name": model.name, "entry": model.entry, "task": model.task, "seed": 0,
           "input_shapes": [list(s) for s in model.input_shapes],
           "input_dtypes": list(model.dtypes)}
    context, _ = _torch_context(job, out)
    reference = load_reference(context.reference)
    figures = {}
    for label, reduce_range in (("8-bit", False), ("7-bit", True)):
        target = out / f"{model_name}.{label}.onnx"
        quantize_onnx(context.fp32_onnx(), target, context.calibration,
                      reduce_range=reduce_range)
        session = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        sqnr = [
            error_stats(session.run(None, dict(zip(names, inputs.values(), strict=True))),
                        outputs, reference.task)["sqnr"]
            for inputs, outputs in [(reference.inputs, reference.outputs), *reference.more]
        ]
        figures[label] = round(statistics.median(sqnr), 2)
    return figures


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    models = MODELS[:1] if args.smoke else MODELS
    figures = {}
    print(f"{'model':20} {'8-bit dB':>9} {'7-bit dB':>9}")
    with tempfile.TemporaryDirectory(prefix="benchlab-int8-") as tmp:
        for name in models:
            out = Path(tmp) / name
            out.mkdir()
            figures[name] = median_sqnr(name, out)
            print(f"{name:20} {figures[name]['8-bit']:9.2f} {figures[name]['7-bit']:9.2f}",
                  flush=True)
    write_result(NAME, args, {"median_sqnr_db": figures})


if __name__ == "__main__":
    main()
