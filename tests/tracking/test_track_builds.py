"""``track``'s builder: the next commit built while the current one is measured on a phone,
never beside a measurement with ``same_host``; a failed build ahead is its commit's error when
the walk reaches it; a stopped track leaves no half-built tree marked built.

The phone is the stand-in one through the real adb client; the build is real but mostly a
``sleep 1``, standing for a compiler on the build host: the emulated phone shares this VM's two
cores, and a compiler's load would slow its measurements down as a real phone's never is.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from benchlab_standin import StandinPhone
from benchlab_standin.adbserver import AdbServer

import benchlab
from benchlab.errors import CommitFailedError
from benchlab.tracking import TrackReport, TrackSettings
from benchlab.tracking.builder import Builder
from benchlab.tracking.gitrepo import BuildCache

from tests.tracking.test_track import commit_files

# The program measured on the phone: a busy loop of the commit's own length, timed by itself.
LOOP = r"""#!/bin/sh
i=0
while [ $i -lt 3 ]; do
  s=$(date +%s%N); j=0
  while [ $j -lt {steps} ]; do j=$((j+1)); done
  e=$(date +%s%N)
  echo "BENCHLAB_METRIC {{\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\",\"value\":$(( (e-s)/1000 ))e-3}}"
  i=$((i+1))
done
"""
BUILD = "sleep 1 && cp loop.sh.in loop.sh"


def phone_track(tmp_path: Path, phone: tuple[StandinPhone, AdbServer], *, same_host: bool
                ) -> tuple[TrackReport, list[str]]:
    """A three-commit track on the phone, in a repository and builds of its own."""
    where = tmp_path / ("same" if same_host else "parallel")
    where.mkdir()
    shas = commit_files(where / "repo", [{"loop.sh.in": LOOP.format(steps=2000)}] * 3)
    spec = where / "spec.json"
    spec.write_text(json.dumps({
        # The build's program is a model file, so it is pushed to the phone with the job.
        "model": {"name": "loop", "format": "generic",
                  "files": {"program": {"location": "{program}", "md5": None}}},
        "tests": [{"identifier": "loop", "repeat": 1, "warmup": 0,
                   "commands": ["sh {files.program}"]}]}))
    settings = TrackSettings(
        repo=where / "repo", revisions="main", builds_dir=where / "builds",
        build_command=BUILD, program="{WORKTREE}/loop.sh", pairs=2, min_effect=0.5,
        same_host=same_host)
    standin, server = phone
    report = benchlab.track([spec], settings=settings, db=where / "t.db",
                            target=f"adb:serial={standin.serial},server_port={server.port}")
    return report, shas


@pytest.mark.slow
def test_the_next_commit_is_built_while_the_phone_measures_unless_same_host(
        tmp_path: Path, phone: tuple[StandinPhone, AdbServer]) -> None:
    parallel, shas = phone_track(tmp_path, phone, same_host=False)
    assert parallel.parallel_build
    assert [p.commit for p in parallel.points] == shas
    for now, after in zip(parallel.points, parallel.points[1:]):
        assert now.measured is not None and after.build is not None
        # Built ahead, while the commit before it was still being measured.
        assert after.build.ahead and after.build.started < now.measured[1]
        assert after.build_overlapped and after.build.seconds >= 1.0
    serial, _ = phone_track(tmp_path, phone, same_host=True)
    assert not serial.parallel_build
    for now, after in zip(serial.points, serial.points[1:]):
        assert now.measured is not None and after.build is not None
        assert not after.build.ahead and after.build.started >= now.measured[1]
        assert not after.build_overlapped
    assert serial.overlapped_build_seconds == 0.0
    assert parallel.overlapped_build_seconds >= 2.0  # commits 1 and 2


def two_commits(tmp_path: Path) -> list[str]:
    """Commit 0 builds; commit 1 does not (its build command fails)."""
    return commit_files(tmp_path / "repo", [{"ok": "yes\n"}, {"ok": "no\n"}])


def test_a_build_that_failed_ahead_is_that_commits_error_when_reached(tmp_path: Path) -> None:
    shas = two_commits(tmp_path)
    cache = BuildCache(tmp_path / "repo", tmp_path / "builds", "grep -q yes ok")
    with Builder(cache, parallel=True) as builder:
        builder.build_ahead(shas[1])  # fails on the builder's thread, raising nothing here
        built, timing = builder.build(shas[0])
        assert timing.fresh and (built.path / ".benchlab-built").exists()
        for _ in range(2):  # the same error each time the commit is asked for
            with pytest.raises(CommitFailedError, match=f"{shas[1][:12]} did not build"):
                builder.build(shas[1])
    assert not (tmp_path / "builds" / shas[1] / ".benchlab-built").exists()


def test_a_build_cut_short_by_a_stop_is_not_marked_built(tmp_path: Path) -> None:
    shas = two_commits(tmp_path)
    cache = BuildCache(tmp_path / "repo", tmp_path / "builds",
                       "touch started && sleep 60 && touch finished")
    tree = tmp_path / "builds" / shas[0]
    with Builder(cache, parallel=True) as builder:
        builder.build_ahead(shas[0])
        deadline = time.monotonic() + 60
        while not (tree / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tree / "started").exists()
    # The track stopped (the builder closed) mid-build: the build was ended, not awaited.
    assert not (tree / "finished").exists()
    assert not (tree / ".benchlab-built").exists()
    rebuilt = BuildCache(tmp_path / "repo", tmp_path / "builds", "touch finished").build(shas[0])
    assert rebuilt.fresh and (tree / "finished").exists()
