"""The benchmark binary's stand-in: "classifies" each image of its input file into
<output_folder>/softmax.txt (one class a line) and prints its latency as FAI-PEP binaries do.

The "model" predicts image n as class n % 4, except that it gets every multiple of 7 wrong
(think of a quantisation error), so the accuracy is below 100 %.
"""

import argparse
import json
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--input", required=True)
parser.add_argument("--output_folder", required=True)
args = parser.parse_args()

images = [int(line) for line in open(args.input) if line.strip()]
started = time.perf_counter()
classes = [(n + 1) % 4 if n % 7 == 0 else n % 4 for n in images]
elapsed_ms = (time.perf_counter() - started) * 1e3
with open(os.path.join(args.output_folder, "softmax.txt"), "w") as out:
    out.writelines(f"{c}\n" for c in classes)
print("Caffe2Observer " + json.dumps({"type": "NET", "metric": "latency", "unit": "ms",
                                      "value": elapsed_ms}))
