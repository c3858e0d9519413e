"""Model postprocess: every repetition's counts (<dir>/<prefix>_<i>.txt) into one accuracy."""

import argparse
import json
import os

parser = argparse.ArgumentParser()
parser.add_argument("--dir", required=True)
parser.add_argument("--prefix", required=True)
parser.add_argument("--limit", type=int, required=True)
parser.add_argument("--metric-keyword", default="Caffe2Observer ")
args = parser.parse_args()

parts = []
for index in range(args.limit):
    with open(os.path.join(args.dir, f"{args.prefix}_{index}.txt")) as handle:
        parts.append(json.load(handle))
correct = sum(p["correct"] for p in parts)
total = sum(p["total"] for p in parts)
print(args.metric_keyword + json.dumps({"type": "NET", "metric": "total_top1_accuracy",
                                        "unit": "percent", "value": 100.0 * correct / total}))
