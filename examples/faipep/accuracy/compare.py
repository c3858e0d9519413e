"""Test postprocess: the pulled classes against the golden labels of the same images; writes
the counts to --result-file and prints the repetition's top-1 accuracy as a metric line."""

import argparse
import json

parser = argparse.ArgumentParser()
parser.add_argument("--benchmark-output", required=True)
parser.add_argument("--images", required=True)
parser.add_argument("--labels", required=True)
parser.add_argument("--result-file", required=True)
parser.add_argument("--metric-keyword", default="Caffe2Observer ")
args = parser.parse_args()

images = [line.strip() for line in open(args.images) if line.strip()]
predicted = [line.strip() for line in open(args.benchmark_output) if line.strip()]
golden = dict(line.split() for line in open(args.labels) if line.strip())
if len(predicted) != len(images):
    raise SystemExit(f"{len(predicted)} classes for {len(images)} images")
correct = sum(golden[image] == label for image, label in zip(images, predicted))
with open(args.result_file, "w") as out:
    json.dump({"correct": correct, "total": len(images)}, out)
print(args.metric_keyword + json.dumps({"type": "NET", "metric": "top1_accuracy",
                                        "unit": "percent",
                                        "value": 100.0 * correct / len(images)}))
