"""Model preprocess: write the "data set", one image id a line (a stand-in for an image list)."""

import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--count", type=int, required=True)
parser.add_argument("--output", required=True)
args = parser.parse_args()
with open(args.output, "w") as out:
    out.writelines(f"{n}\n" for n in range(args.count))
