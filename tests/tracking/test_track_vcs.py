"""``track`` on Mercurial as on git, and FAI-PEP's weekly reference, read from either.

The repositories are real (``git``, ``hg``), their commits dated across a week boundary in a
committer time zone of +0900, so that the local date (Monday both times) and the UTC one
(Sunday, then Monday) disagree: the rule must read UTC.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

import benchlab
from benchlab.errors import UsageError
from benchlab.protocol.step import include_dir
from benchlab.tracking import TrackSettings
from benchlab.tracking.gitrepo import BuildCache, list_commits
from benchlab.tracking.vcs import CommitTime, detect_kind, open_repository
from benchlab.tracking.week import week_start, weekly_reference, weekly_reference_in

ROOT = Path(__file__).resolve().parents[2]
DOT_C = (ROOT / "examples" / "count" / "dot.c").read_text()

# Sat 2026-11-21 12:00 UTC, Sun 23:30 UTC and Mon 00:30 UTC written as +0900 local times (both
# Monday locally), then Tue and Wed. The week of the newest starts Mon 2026-11-23 00:00 UTC.
DATES = ["2026-11-21 21:00:00 +0900", "2026-11-23 08:30:00 +0900", "2026-11-23 09:30:00 +0900",
         "2026-11-24 10:00:00 +0900", "2026-11-25 10:00:00 +0900"]
MONDAY = int(datetime(2026, 11, 23, tzinfo=timezone.utc).timestamp())


def hg_repo(path: Path, versions: Sequence[dict[str, str]], dates: Sequence[str]) -> list[str]:
    """A Mercurial repository at ``path``, one commit per entry, dated; their full hashes."""
    path.mkdir()

    def hg(*args: str) -> str:
        return subprocess.run(["hg", "--cwd", str(path), *args], check=True,
                              capture_output=True, text=True).stdout.strip()

    hg("init")
    nodes = []
    for i, (files, date) in enumerate(zip(versions, dates, strict=True)):
        for name, text in {**files, "version.txt": f"{i}\n"}.items():
            (path / name).write_text(text)
        hg("commit", "-A", "-q", "-u", "test", "-d", date, "-m", f"commit {i}")
        nodes.append(hg("log", "-r", ".", "-T", "{node}"))
    return nodes


def git_repo(path: Path, dates: Sequence[str]) -> list[str]:
    """A git repository at ``path`` whose commits carry ``dates`` as committer dates."""
    path.mkdir()

    def git(*args: str, date: str = "") -> str:
        env = {"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date} if date else {}
        return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True,
                              text=True, env={"PATH": "/usr/bin:/bin", **env}).stdout.strip()

    git("init", "-q", "-b", "main")
    shas = []
    for i, date in enumerate(dates):
        (path / "version.txt").write_text(f"{i}\n")
        git("add", ".")
        git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m",
            f"commit {i}", date=date)
        shas.append(git("rev-parse", "HEAD"))
    return shas


def test_the_week_starts_on_monday_at_midnight_utc() -> None:
    assert week_start(MONDAY) == MONDAY
    assert week_start(MONDAY - 1) == MONDAY - 7 * 24 * 3600  # Sunday 23:59:59 is last week's
    assert week_start(MONDAY + 6 * 24 * 3600 + 86399) == MONDAY


def test_the_weekly_reference_is_the_later_of_the_base_and_the_weeks_first_commit() -> None:
    history = [CommitTime("sat", MONDAY - 36 * 3600), CommitTime("sun", MONDAY - 1800),
               CommitTime("mon", MONDAY + 1800), CommitTime("tue", MONDAY + 86400)]
    newest = history[-1].time
    assert weekly_reference(history, newest) == "mon"
    assert weekly_reference(history, newest, base=history[0]) == "mon"  # earlier: the week's
    assert weekly_reference(history, newest, base=history[3]) == "tue"  # later: the base
    # Measured in Sunday's week, Sunday's own commit is the first of it.
    assert weekly_reference(history[:2], history[1].time) == "sat"


def needs_hg(kind: str) -> None:
    if kind == "hg" and shutil.which("hg") is None:
        pytest.skip("Mercurial is not installed (apt-get install mercurial)")


@pytest.mark.parametrize("kind", ["git", pytest.param("hg", marks=pytest.mark.hg)])
def test_the_weekly_reference_reads_utc_commit_times_from_the_repository(
        kind: str, tmp_path: Path) -> None:
    needs_hg(kind)
    repo = tmp_path / "repo"
    shas = (hg_repo(repo, [{}] * len(DATES), DATES) if kind == "hg"
            else git_repo(repo, DATES))
    assert detect_kind(repo) == kind
    repository = open_repository(repo)
    assert repository.commit_time(shas[1]).time == MONDAY - 1800  # Sunday 23:30 UTC
    # Both were made on a Monday at +0900; in UTC the first was Sunday's, the second Monday's.
    assert weekly_reference_in(repository, shas[-1]) == shas[2]
    assert weekly_reference_in(repository, shas[-1], base=shas[0]) == shas[2]
    assert weekly_reference_in(repository, shas[-1], base=shas[3]) == shas[3]
    assert weekly_reference_in(repository, shas[1]) == shas[0]  # Sunday's week began Saturday
    # Ranges mean the same in both: A..B excludes A, a name is its whole history.
    assert list_commits(repo, f"{shas[1]}..{shas[3]}") == shas[2:4]
    head = "HEAD" if kind == "git" else "tip"
    assert list_commits(repo, head) == shas
    assert list_commits(repo, head, step=3) == [shas[0], shas[3], shas[4]]
    with pytest.raises(UsageError, match="no-such-rev|unknown revision|bad revision"):
        repository.resolve("no-such-rev")


@pytest.mark.hg
def test_a_mercurial_commit_is_archived_and_built_once(tmp_path: Path) -> None:
    needs_hg("hg")
    nodes = hg_repo(tmp_path / "repo", [{"a.txt": "one\n"}, {"a.txt": "two\n"}], DATES[:2])
    cache = BuildCache(tmp_path / "repo", tmp_path / "builds", "cat a.txt > built.txt")
    first = cache.build(nodes[0][:12])  # a short hash names it too
    assert first.commit == nodes[0] and first.fresh
    assert (first.path / "built.txt").read_text() == "one\n"
    assert not cache.build(nodes[0]).fresh
    assert (cache.build(nodes[1]).path / "built.txt").read_text() == "two\n"


@pytest.mark.hg
@pytest.mark.valgrind
@pytest.mark.slow
def test_track_walks_a_mercurial_history_to_its_step_against_the_weekly_reference(
        tmp_path: Path) -> None:
    """Commit 3 of six does 1% more work; counted, one pair a commit. The weekly reference
    is commit 2, the first of the newest commit's UTC week."""
    needs_hg("hg")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if shutil.which("valgrind") is None or compiler is None:
        pytest.skip("valgrind or a C compiler is missing")
    nodes = hg_repo(tmp_path / "repo", [
        {"dot.c": DOT_C.replace("long n = 100000;", f"long n = {101_000 if i >= 3 else 100_000};")}
        for i in range(6)], [*DATES, "2026-11-26 10:00:00 +0900"])
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "model": {"name": "dot", "format": "program"},
        "tests": [{"identifier": "default", "commands": ["{program}"]}],
    }))
    settings = TrackSettings(
        repo=tmp_path / "repo", revisions="tip", builds_dir=tmp_path / "builds",
        build_command=f"{compiler} -O2 -std=c99 -I{include_dir()} dot.c -o dot",
        program="{WORKTREE}/dot --iter 2", step=2, pairs=1, min_effect=0.005,
        measure="instructions", reference_rule="week")
    report = benchlab.track([spec], settings=settings, db=tmp_path / "t.db")
    assert report.reference == nodes[2]
    assert [node for node, _ in report.culprits] == [nodes[3]]
    assert report.culprits[0][1] == pytest.approx(0.01, abs=0.0005)
    # Walked 0, 2, 4, 5; the step between 2 and 4 bisected to 3.
    assert [p.commit for p in report.points] == [nodes[i] for i in (0, 2, 3, 4, 5)]
    assert not report.parallel_build  # the host is the device: builds never overlap


def test_cli_track_refuses_an_unknown_vcs_and_a_base_commit_beside_a_reference(
        tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from benchlab.cli.commands import app

    git_repo(tmp_path / "repo", DATES[:1])
    (tmp_path / "spec.yaml").write_text("model: {name: p, format: script}\n"
                                        "tests: [{identifier: d, commands: ['{program}']}]\n")
    common = ["track", str(tmp_path / "spec.yaml"), "--repo", str(tmp_path / "repo"),
              "--program", "true", "--db", str(tmp_path / "t.db")]
    # The errors are the library's UsageError (exit 2 through the benchlab command).
    svn = CliRunner().invoke(app, [*common, "--vcs", "svn"])
    assert isinstance(svn.exception, UsageError) and "svn" in str(svn.exception)
    both = CliRunner().invoke(app, [*common, "--reference", "HEAD", "--base_commit", "HEAD"])
    assert isinstance(both.exception, UsageError) and "--base-commit" in str(both.exception)
