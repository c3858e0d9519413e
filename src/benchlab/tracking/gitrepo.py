"""Builds for ``track``: list commits, put each commit's tree in its own directory, build once.

A commit's build lives in ``<builds>/<hash>``: a detached worktree of a git repository, an
``hg archive`` of a Mercurial one (:mod:`benchlab.tracking.vcs`). A marker file written after
the build command succeeds means the commit is never built again, even by a later ``track``
run. A failed or cancelled build leaves its log beside the tree and no marker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from benchlab.errors import CommitFailedError, UsageError
from benchlab.tracking.vcs import GitRepository, open_repository

__all__ = ["Build", "BuildCache", "commit_program", "every_nth", "fetch", "git", "list_commits"]

_MARKER = ".benchlab-built"


def git(repo: Path, *args: str) -> str:
    """Run a git command in ``repo`` and return its stdout; errors become UsageError."""
    return GitRepository(repo).git(*args)


def fetch(repo: Path, remote: str, branch: str, vcs: str | None = None) -> str:
    """Fetch (git) or pull (Mercurial) ``branch`` from ``remote``; its new head.

    A failure (the remote unreachable, the branch gone) is an
    :class:`~benchlab.errors.InfrastructureError` naming the remote and what the tool said.
    """
    return open_repository(repo, vcs).fetch(remote, branch)


def list_commits(repo: Path, revisions: str, step: int = 1, vcs: str | None = None
                 ) -> list[str]:
    """Commits of ``revisions`` (``A..B`` or a branch), oldest first, every ``step``-th one.

    The newest commit is always kept, so a step never skips the head of the range.
    """
    commits = open_repository(repo, vcs).list_commits(revisions)
    if not commits:
        raise UsageError(f"{revisions!r} names no commits in {repo}")
    return every_nth(commits, step)


def every_nth(commits: list[str], step: int) -> list[str]:
    """Every ``step``-th commit, oldest first, always ending with the newest."""
    chosen = commits[:: max(step, 1)]
    if chosen[-1] != commits[-1]:
        chosen.append(commits[-1])
    return chosen


@dataclass(frozen=True, slots=True)
class Build:
    """One built commit: its worktree directory, and whether this call had to build it."""

    commit: str
    path: Path
    fresh: bool


class BuildCache:
    """Commits' trees and build outputs under ``root``, one directory per commit.

    ``vcs`` is ``git`` or ``hg`` (default: detected from the repository): a git commit's tree
    is a detached worktree, a Mercurial one an ``hg archive`` (:mod:`benchlab.tracking.vcs`).
    """

    def __init__(self, repo: Path, root: Path, command: str | None, timeout: float = 1800.0,
                 vcs: str | None = None):
        self.repository = open_repository(repo, vcs)
        self.repo = self.repository.path
        self.root = root
        self.command = command
        self.timeout = timeout

    def build(self, commit: str, cancel: threading.Event | None = None) -> Build:
        """The commit's built tree, building it only if it was never built.

        A set ``cancel`` (the track is stopping) ends the build command early; the commit is
        then not marked built, and the next track builds it again.
        """
        sha = self.repository.resolve(commit)
        path = self.root / sha
        if (path / _MARKER).exists():
            return Build(sha, path, fresh=False)
        self.root.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            self.repository.materialise(sha, path)
        if self.command:
            returncode, output = _run_build(self.command, path, self.timeout, cancel)
            log = self.root / f"{sha}.build.log"
            log.write_text(output)
            if returncode is None:
                raise CommitFailedError(f"commit {sha[:12]}: its build was cancelled "
                                        f"(the track stopped)")
            if returncode != 0:
                last = next((line.strip() for line in reversed(output.splitlines())
                             if line.strip()), "no output")
                raise CommitFailedError(
                    f"commit {sha[:12]} did not build: {self.command!r} exited "
                    f"{returncode} ({last}); full log: {log}")
        (path / _MARKER).write_text(sha + "\n")
        return Build(sha, path, fresh=True)


def _run_build(command: str, cwd: Path, timeout: float,
               cancel: threading.Event | None) -> tuple[int | None, str]:
    """Run the build command; its exit status (``None`` when cancelled) and its output.

    It runs in a process group of its own, so a cancel or a timeout ends the compilers it
    started too, not only the shell.
    """
    with tempfile.TemporaryFile("w+") as output:
        proc = subprocess.Popen(command, shell=True, cwd=cwd, stdout=output,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    returncode: int | None = proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    if cancel is not None and cancel.is_set():
                        returncode = None
                        break
                    if time.monotonic() > deadline:
                        raise CommitFailedError(
                            f"the build of {cwd.name[:12]} ran past {timeout:.0f} s: "
                            f"{command!r}") from None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        output.seek(0)
        return returncode, output.read()


def commit_program(
    repo: Path, commit: str, program: str, builds_dir: Path, build_command: str | None
) -> tuple[str, str]:
    """Build ``commit`` (once, in its worktree) and return its sha and its ``{program}``.

    ``program`` names the build's command with ``{WORKTREE}`` standing for the worktree, so an
    A/B side can be "this commit of that repository, built with that command".
    """
    built = BuildCache(repo, builds_dir, build_command).build(commit)
    return built.commit, program.replace("{WORKTREE}", str(built.path))
