"""``track`` over a real git repository whose commit k makes the program 10% slower.

Each commit's ``prog.py`` prints observer lines whose level is set by its SLOWDOWN constant,
with process noise drawn from a counter file, so runs are real processes and the truth is known.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

import benchlab
from benchlab.store import open_store
from benchlab.tracking import TrackReport, TrackSettings, find_change_points

PROGRAM = '''
import argparse, json, math, random
SLOWDOWN = {slowdown}
p = argparse.ArgumentParser(); p.add_argument("--state"); a = p.parse_args()
try:
    n = int(open(a.state).read())
except OSError:
    n = 0
open(a.state, "w").write(str(n + 1))
rng = random.Random(n)
level = 1000 * (1 + SLOWDOWN) * math.exp(rng.gauss(0, 0.02))
for _ in range(10):
    v = level * math.exp(rng.gauss(0, 0.005))
    print("PyTorchObserver " + json.dumps({{"type": "NET", "metric": "latency", "unit": "us",
                                           "value": v}}))
'''


def commit_files(path: Path, versions: Sequence[Mapping[str, str]]) -> list[str]:
    """A new repository at ``path`` with one commit per entry of ``versions`` (file name →
    text, plus ``version.txt``), on branch main; the commits' hashes."""
    path.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True,
                              text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    shas = []
    for i, files in enumerate(versions):
        for name, text in {**files, "version.txt": f"{i}\n"}.items():
            (path / name).write_text(text)
        git("add", ".")
        git("commit", "-q", "-m", f"commit {i}")
        shas.append(git("rev-parse", "HEAD"))
    return shas


def make_repo(path: Path, commits: int, slow_from: int) -> list[str]:
    """A repository of ``commits`` commits; from index ``slow_from`` on, the program is slower."""
    return commit_files(path, [
        {"prog.py": PROGRAM.format(slowdown=0.10 if i >= slow_from else 0.0)}
        for i in range(commits)])


def spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({
        "model": {"name": "prog", "format": "script"},
        "tests": [{"identifier": "default", "commands": ["{program}"]}],
    }))
    return path


def settings(tmp_path: Path, repo: Path, **kwargs: object) -> TrackSettings:
    builds_log = tmp_path / "builds.log"
    return TrackSettings(
        repo=repo, revisions="main", builds_dir=tmp_path / "builds",
        program=f"{sys.executable} {{WORKTREE}}/prog.py --state {tmp_path / 'state'}",
        build_command=f"git rev-parse HEAD >> {builds_log}", pairs=10, min_effect=0.03,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.slow
def test_track_bisects_to_the_commit_that_made_it_slower(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", commits=8, slow_from=5)
    report = benchlab.track([spec(tmp_path)], settings=settings(tmp_path, tmp_path / "repo",
                            step=3), db=tmp_path / "r.db", cache_dir=tmp_path / "cache")
    assert [c for c, _ in report.culprits] == [shas[5]]  # commit k, and nothing else
    assert 0.07 < report.culprits[0][1] < 0.13
    measured = [p.commit for p in report.points]
    assert measured == [shas[i] for i in (0, 3, 4, 5, 6, 7)]  # walk 0,3,6,7 + bisection 4,5
    built = (tmp_path / "builds.log").read_text().split()
    assert sorted(built) == sorted(set(built))  # no commit was built twice
    # A second track of the same range measures and builds nothing again.
    again = benchlab.track([spec(tmp_path)], settings=settings(tmp_path, tmp_path / "repo",
                           step=3), db=tmp_path / "r.db", cache_dir=tmp_path / "cache")
    assert [c for c, _ in again.culprits] == [shas[5]]
    assert (tmp_path / "builds.log").read_text().split() == built
    with open_store(tmp_path / "r.db") as store:
        variants = [r.identity.variant for r in store.results()]
    assert sorted(v for v in variants if v.startswith("commit:")) == sorted(
        f"commit:{c}" for c in measured)


@pytest.mark.slow
def test_status_file_stops_and_a_rerun_resumes(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo", commits=3, slow_from=99)
    status = tmp_path / "status"
    status.write_text("stop\n")
    stopped = benchlab.track([spec(tmp_path)], settings=settings(
        tmp_path, tmp_path / "repo", status_file=status), db=tmp_path / "r.db",
        cache_dir=tmp_path / "cache")
    assert stopped.stopped and not stopped.points
    status.write_text("")
    done = benchlab.track([spec(tmp_path)], settings=settings(
        tmp_path, tmp_path / "repo", status_file=status), db=tmp_path / "r.db",
        cache_dir=tmp_path / "cache")
    assert not done.stopped and len(done.points) == 3 and not done.culprits
    assert status.read_text().strip() == "done"
    with open_store(tmp_path / "r.db") as store:
        assert len(store.list_runs()) == 1  # the stopped run was resumed, not duplicated


def test_change_points_on_known_series() -> None:
    flat = [[0.0 + 0.01 * ((i * 7 + j) % 3 - 1) for j in range(10)] for i in range(6)]
    assert find_change_points(flat) == []
    stepped = flat[:3] + [[v + 0.1 for v in g] for g in flat[3:]]
    (step,) = find_change_points(stepped)
    assert step.index == 3 and 0.09 < step.change < 0.12


@pytest.mark.slow
def test_cli_track_prints_the_series_and_exits_1_on_a_step(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", commits=4, slow_from=2)
    proc = subprocess.run(
        [sys.executable, "-m", "benchlab", "track", str(spec(tmp_path)),
         "--repo", str(tmp_path / "repo"), "--revisions", "main", "--pairs", "8",
         "--min-effect", "3%", "--builds-dir", str(tmp_path / "builds"), "-q",
         "--program", f"{sys.executable} {{WORKTREE}}/prog.py --state {tmp_path / 'state'}",
         "--db", str(tmp_path / "r.db")],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    assert f"first seen at {shas[2][:12]}" in proc.stdout and "← step" in proc.stdout


@pytest.mark.slow
def test_compare_two_commits_of_a_repository(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", commits=2, slow_from=1)
    proc = subprocess.run(
        [sys.executable, "-m", "benchlab", "compare", str(spec(tmp_path)),
         "--repo", str(tmp_path / "repo"), "--control-commit", shas[0],
         "--treatment-commit", "main", "--build", "true", "--pairs", "10,20", "-q",
         "--commit-program", f"{sys.executable} {{WORKTREE}}/prog.py --state {tmp_path / 's'}",
         "--db", str(tmp_path / "r.db")],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")},
    )
    assert proc.returncode == 1, proc.stderr  # the second commit is 10% slower
    assert f"control:{shas[0][:12]}" in proc.stdout and "regression" in proc.stdout


def _track_cli(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchlab", "track", str(spec(tmp_path)),
         "--repo", str(tmp_path / "repo"), "--revisions", "main", "--pairs", "4",
         "--builds-dir", str(tmp_path / "builds"), "-q", "--db", str(tmp_path / "r.db"),
         *extra],
        capture_output=True, text=True, timeout=300,
    )


@pytest.mark.slow
def test_cli_track_a_commit_that_does_not_build_is_one_line_and_exit_1(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", commits=3, slow_from=3)
    proc = _track_cli(
        tmp_path, "--build", 'echo compiling; test "$(cat version.txt)" != 2 || '
                             '{ echo "error: version 2 is broken" >&2; exit 7; }',
        "--program", f"{sys.executable} {{WORKTREE}}/prog.py --state {tmp_path / 'state'}")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.strip()]
    assert line.startswith("error: commit " + shas[2][:12] + " did not build")
    assert "exited 7 (error: version 2 is broken)" in line
    log = tmp_path / "builds" / f"{shas[2]}.build.log"
    assert line.endswith(f"full log: {log}") and "compiling" in log.read_text()


@pytest.mark.slow
def test_cli_track_a_commit_whose_benchmark_fails_is_one_line_and_exit_1(
    tmp_path: Path,
) -> None:
    make_repo(tmp_path / "repo", commits=2, slow_from=2)
    proc = _track_cli(tmp_path, "--program", f"{sys.executable} -c 'raise SystemExit(3)'")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "error: commit " in proc.stderr and "its benchmark failed" in proc.stderr


def _wait_for(check: Callable[[], bool], what: str, timeout: float = 300.0) -> None:
    """Poll ``check`` until it holds (a generous bound only against hangs, not a timing)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.mark.slow
def test_follow_fetches_the_remote_branch_before_each_pass(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    make_repo(upstream, commits=2, slow_from=99)
    origin = tmp_path / "origin.git"  # a real remote: a bare repository on disk
    subprocess.run(["git", "clone", "-q", "--bare", str(upstream), str(origin)], check=True)
    local = tmp_path / "local"
    subprocess.run(["git", "clone", "-q", str(origin), str(local)], check=True)
    status = tmp_path / "status"
    status.write_text("")
    chosen = replace(settings(tmp_path, local, status_file=status, remote="origin",
                              branch="main"), revisions="origin/main")
    reports: list[TrackReport] = []
    follower = threading.Thread(target=lambda: reports.append(benchlab.track(
        [spec(tmp_path)], settings=chosen, follow=True, interval=0.2, db=tmp_path / "r.db",
        cache_dir=tmp_path / "cache")))
    follower.start()
    try:
        def status_lines() -> list[str]:
            return status.read_text().splitlines() if status.exists() else []

        def measured(commit: str) -> bool:
            with open_store(tmp_path / "r.db") as store:
                return any(r.identity.variant == f"commit:{commit}" for r in store.results())

        first_head = _git(upstream, "rev-parse", "HEAD")
        _wait_for(lambda: measured(first_head), "the first pass")
        _wait_for(lambda: status_lines()[1:] == [f"fetched origin/main at {first_head}"],
                  "the fetch to be recorded")
        # A new commit reaches the remote; nothing moves the local branch but the fetch.
        (upstream / "version.txt").write_text("new\n")
        _git(upstream, "commit", "-q", "-am", "new commit")
        new_head = _git(upstream, "rev-parse", "HEAD")
        _git(upstream, "push", "-q", str(origin), "main")
        _wait_for(lambda: measured(new_head), "the new commit to be measured")
        # An unreachable remote: the poll says so and the next one retries.
        origin.rename(tmp_path / "away.git")
        _wait_for(lambda: "fetch failed, retrying at the next poll" in status.read_text(),
                  "the failed fetch to be recorded")
        (tmp_path / "away.git").rename(origin)
        _wait_for(lambda: status_lines()[1:] == [f"fetched origin/main at {new_head}"],
                  "a fetch after the remote came back")
    finally:
        deadline = time.monotonic() + 300
        while follower.is_alive() and time.monotonic() < deadline:
            status.write_text("stop\n")  # again, in case a status update raced the first one
            follower.join(timeout=1)
    [report] = reports
    assert report.stopped
    assert new_head in [p.commit for p in report.points]


def test_cli_track_with_an_unreachable_remote_is_one_line_and_exit_3(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo", commits=2, slow_from=99)
    proc = subprocess.run(
        [sys.executable, "-m", "benchlab", "track", str(spec(tmp_path)), "--repo",
         str(tmp_path / "repo"), "--program", "true", "--remote", "nosuch", "--branch", "main",
         "--db", str(tmp_path / "r.db"), "--builds-dir", str(tmp_path / "b")],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: git fetch nosuch main in ") and "failed:" in line
