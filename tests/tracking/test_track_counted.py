"""``track --measure instructions`` over a real git repository of a compiled C program whose
commit 4 does 1% more work: counted under the real valgrind, one pair per commit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

import benchlab
from benchlab.protocol.step import include_dir
from benchlab.tracking import TrackSettings

from tests.tracking.test_track import commit_files

pytestmark = [pytest.mark.valgrind, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DOT_C = (ROOT / "examples" / "count" / "dot.c").read_text()


def make_repo(path: Path, commits: int, step_at: int) -> list[str]:
    """Commit i builds examples/count/dot.c with 100,000 elements by default, or 101,000
    from ``step_at`` on."""
    return commit_files(path, [
        {"dot.c": DOT_C.replace("long n = 100000;",
                                f"long n = {101_000 if i >= step_at else 100_000};")}
        for i in range(commits)])


def test_a_one_percent_step_is_found_at_its_commit_by_counts(tmp_path: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if shutil.which("valgrind") is None or compiler is None:
        pytest.skip("valgrind or a C compiler is missing")
    shas = make_repo(tmp_path / "repo", commits=7, step_at=4)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "model": {"name": "dot", "format": "program"},
        "tests": [{"identifier": "default", "commands": ["{program}"]}],
    }))
    settings = TrackSettings(
        repo=tmp_path / "repo", revisions="main", builds_dir=tmp_path / "builds",
        build_command=f"{compiler} -O2 -std=c99 -I{include_dir()} dot.c -o dot",
        program="{WORKTREE}/dot --iter 2",
        step=2, pairs=1, min_effect=0.005, measure="instructions")
    report = benchlab.track([spec], settings=settings, db=tmp_path / "t.db")
    # Measured every second commit (0, 2, 4, 6), then bisected: the step is at commit 4,
    # found there and nowhere else, its size the program's own 1%.
    assert [sha for sha, _ in report.culprits] == [shas[4]]
    ((_, change),) = report.culprits
    assert change == pytest.approx(0.01, abs=0.0005)
    measured = {p.commit for p in report.points}
    assert shas[3] in measured  # the bisection measured between the walk's 2 and 4
    assert all(len(p.log_ratios) == 1 for p in report.points)  # one counted pair each

