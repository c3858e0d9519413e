"""Git and builds for ``track``: list commits, check each out in its own worktree, build once.

A commit's build lives in ``<builds>/<sha>``, a detached worktree of the repository; a marker
file written after the build command succeeds means the commit is never built again, even by a
later ``track`` run. A failed build leaves its log beside the worktree and no marker.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchlab.errors import CommitFailedError, InfrastructureError, UsageError

__all__ = ["Build", "BuildCache", "commit_program", "every_nth", "fetch", "git", "list_commits"]

_MARKER = ".benchlab-built"


def git(repo: Path, *args: str) -> str:
    """Run a git command in ``repo`` and return its stdout; errors become UsageError."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError(f"git {' '.join(args)} in {repo}: {proc.stderr.strip()}")
    return proc.stdout


def fetch(repo: Path, remote: str, branch: str) -> str:
    """Fetch ``branch`` from ``remote`` into ``refs/remotes/<remote>/<branch>``; its new head.

    A failure (the remote unreachable, the branch gone) is an :class:`InfrastructureError`
    naming the remote and what git said.
    """
    proc = subprocess.run(
        ["git", "-C", str(repo), "fetch", "--quiet", remote,
         f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}"],
        capture_output=True, text=True)
    if proc.returncode != 0:
        said = proc.stderr.strip().splitlines()
        raise InfrastructureError(f"git fetch {remote} {branch} in {repo} failed: "
                                  f"{said[-1] if said else f'exit {proc.returncode}'}")
    return git(repo, "rev-parse", f"refs/remotes/{remote}/{branch}").strip()


def list_commits(repo: Path, revisions: str, step: int = 1) -> list[str]:
    """Commits of ``revisions`` (``A..B`` or a branch), oldest first, every ``step``-th one.

    The newest commit is always kept, so a step never skips the head of the range.
    """
    commits = git(repo, "rev-list", "--reverse", "--first-parent", revisions).split()
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
    """Worktrees and build outputs per commit under ``root``."""

    def __init__(self, repo: Path, root: Path, command: str | None, timeout: float = 1800.0):
        self.repo = repo.resolve()
        self.root = root
        self.command = command
        self.timeout = timeout

    def build(self, commit: str) -> Build:
        """The commit's built worktree, building it only if it was never built."""
        sha = git(self.repo, "rev-parse", f"{commit}^{{commit}}").strip()
        path = self.root / sha
        if (path / _MARKER).exists():
            return Build(sha, path, fresh=False)
        self.root.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            git(self.repo, "worktree", "add", "--detach", "--force", str(path), sha)
        if self.command:
            proc = subprocess.run(
                self.command, shell=True, cwd=path, capture_output=True, text=True,
                timeout=self.timeout,
            )
            log = self.root / f"{sha}.build.log"
            log.write_text(proc.stdout + proc.stderr)
            if proc.returncode != 0:
                last = next((line.strip() for line in reversed(
                    (proc.stdout + proc.stderr).splitlines()) if line.strip()), "no output")
                raise CommitFailedError(
                    f"commit {sha[:12]} did not build: {self.command!r} exited "
                    f"{proc.returncode} ({last}); full log: {log}")
        (path / _MARKER).write_text(sha + "\n")
        return Build(sha, path, fresh=True)


def commit_program(
    repo: Path, commit: str, program: str, builds_dir: Path, build_command: str | None
) -> tuple[str, str]:
    """Build ``commit`` (once, in its worktree) and return its sha and its ``{program}``.

    ``program`` names the build's command with ``{WORKTREE}`` standing for the worktree, so an
    A/B side can be "this commit of that repository, built with that command".
    """
    built = BuildCache(repo, builds_dir, build_command).build(commit)
    return built.commit, program.replace("{WORKTREE}", str(built.path))
