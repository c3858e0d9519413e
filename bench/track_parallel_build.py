"""Wall time of ``track`` on the stand-in phone with and without ``--same-host``.

FAI-PEP's ``--same_host`` rule: when the device is not the build host, the next commit is built
while the current one is measured, so a track costs about max(build, measurement) a commit
instead of their sum. Each repeat runs the same track twice, in alternating order, in fresh
repositories and build directories (nothing cached): once with builds beside the phone's
measurements (the default for an adb target), once with ``same_host`` (each build alone).

The build is ``sleep`` for ``--build-seconds`` then a copy: it stands for a compiler on the
build host. The stand-in phone shares this VM's two cores, so a compiler's load would slow its
measurements, which on a real phone it does not; a sleeping build keeps the figure about the
overlap. The measured program is a shell busy loop pushed to the phone as a model file.

Run: ``python bench/track_parallel_build.py`` (about 3 min on 2 vCPUs); ``--smoke`` for CI.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _common import parse_args, spread, write_result
from benchlab_standin import StandinPhone
from benchlab_standin.adbserver import isolated_adb_server

import benchlab
from benchlab.tracking import TrackSettings

NAME = "track_parallel_build"

LOOP = r"""#!/bin/sh
i=0
while [ $i -lt 3 ]; do
  s=$(date +%s%N); j=0
  while [ $j -lt 4000 ]; do j=$((j+1)); done
  e=$(date +%s%N)
  echo "BENCHLAB_METRIC {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\",\"value\":$(( (e-s)/1000 ))e-3}"
  i=$((i+1))
done
"""


def _extra(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--commits", type=int, default=5, help="commits in each track")
    parser.add_argument("--build-seconds", type=float, default=2.0, help="each build's length")
    parser.add_argument("--pairs", type=int, default=4, help="A/B pairs per commit")


def _repository(path: Path, commits: int) -> None:
    path.mkdir(parents=True)

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(path), "-c", "user.name=b", "-c",
                        "user.email=b@example.com", *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    for i in range(commits):
        (path / "loop.sh.in").write_text(LOOP)
        (path / "version.txt").write_text(f"{i}\n")
        git("add", ".")
        git("commit", "-q", "-m", f"commit {i}")


def _track(where: Path, target: str, args: argparse.Namespace, same_host: bool) -> dict[str, float]:
    _repository(where / "repo", args.commits)
    spec = where / "spec.json"
    spec.write_text(json.dumps({
        "model": {"name": "loop", "format": "generic",
                  "files": {"program": {"location": "{program}", "md5": None}}},
        "tests": [{"identifier": "loop", "repeat": 1, "warmup": 0,
                   "commands": ["sh {files.program}"]}]}))
    settings = TrackSettings(
        repo=where / "repo", revisions="main", builds_dir=where / "builds",
        build_command=f"sleep {args.build_seconds} && cp loop.sh.in loop.sh",
        program="{WORKTREE}/loop.sh", pairs=args.pairs, min_effect=0.5, same_host=same_host)
    started = time.perf_counter()
    report = benchlab.track([spec], settings=settings, db=where / "t.db", target=target)
    return {"wall_s": time.perf_counter() - started, "build_s": report.build_seconds,
            "overlapped_build_s": report.overlapped_build_seconds}


def main() -> None:
    """Measure, print a table, write the JSON result."""
    args = parse_args(__doc__.splitlines()[0], repeats=3, extra=_extra)
    if args.smoke:
        args.commits, args.build_seconds, args.pairs, args.repeats = 2, 0.2, 2, 1
    tmp = Path(tempfile.mkdtemp(prefix="benchlab-bench-track-"))
    runs: dict[str, list[dict[str, float]]] = {"parallel": [], "same_host": []}
    with StandinPhone(tmp / "phone") as phone, isolated_adb_server() as server:
        server.connect(phone.serial)
        target = f"adb:serial={phone.serial},server_port={server.port}"
        for repeat in range(args.repeats):
            order = ["parallel", "same_host"] if repeat % 2 == 0 else ["same_host", "parallel"]
            for mode in order:
                runs[mode].append(_track(tmp / f"{mode}-{repeat}", target, args,
                                         same_host=mode == "same_host"))
    figures: dict[str, object] = {
        mode: {key: spread([r[key] for r in results]) for key in results[0]}
        for mode, results in runs.items()
    }
    parallel = [r["wall_s"] for r in runs["parallel"]]
    serial = [r["wall_s"] for r in runs["same_host"]]
    figures["saving_s"] = spread([s - p for s, p in zip(serial, parallel, strict=True)])
    figures["setup"] = {"commits": args.commits, "build_seconds": args.build_seconds,
                        "pairs": args.pairs}
    print(f"{'mode':12} {'wall s (median, min–max)':>28} {'build s':>9} {'overlapped s':>13}")
    for mode in runs:
        f = figures[mode]
        assert isinstance(f, dict)
        w = f["wall_s"]
        print(f"{mode:12} {w['median']:>12.1f} ({w['min']:.1f}–{w['max']:.1f}){'':>7}"
              f" {f['build_s']['median']:>9.1f} {f['overlapped_build_s']['median']:>13.1f}")
    print(f"saving: {figures['saving_s']['median']:.1f} s a track")  # type: ignore[index]
    print(f"wrote {write_result(NAME, args, figures)}")


if __name__ == "__main__":
    main()
