"""The version-control seam of ``track``: the same few questions asked of git or Mercurial.

``track`` needs five things of a repository: the commits of a range (oldest first, first
parents only, so a merged branch's own commits are not walked), a revision's full hash, each
commit's time (for the weekly reference, :mod:`benchlab.tracking.week`), a commit's tree in a
directory of its own, and a fetch of the followed branch. :class:`GitRepository` and
:class:`MercurialRepository` answer them; :func:`open_repository` picks one, by the kind given
or by the repository's ``.git`` / ``.hg`` (FAI-PEP's ``repo_driver.py --repo {git,hg}``).

Ranges are written the same way for both: ``A..B`` (the commits of B not in A), or one name
(a branch, a tag, a bookmark: its whole first-parent history). For Mercurial, ``HEAD`` means
the working copy's parent (``.``), as it means the checked-out commit in git, and anything
else with revset syntax in it is passed through as a revset.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from benchlab.errors import InfrastructureError, UsageError

__all__ = [
    "KINDS",
    "CommitTime",
    "GitRepository",
    "MercurialRepository",
    "Repository",
    "detect_kind",
    "open_repository",
]

KINDS = ("git", "hg")
"""The version-control systems ``track`` walks (``TrackSettings.vcs``, ``--vcs``)."""


@dataclass(frozen=True, slots=True)
class CommitTime:
    """A commit and its commit time, in seconds since the epoch (UTC, whatever the committer's
    own time zone was)."""

    commit: str
    time: int


class Repository(Protocol):
    """What ``track`` asks of a repository, whichever system keeps it."""

    path: Path
    kind: str

    def list_commits(self, revisions: str) -> list[str]:
        """Full hashes of ``revisions``' first-parent commits, oldest first."""
        ...

    def resolve(self, revision: str) -> str:
        """The full hash ``revision`` names; a :class:`UsageError` when it names none."""
        ...

    def commit_time(self, revision: str) -> CommitTime:
        """The commit ``revision`` names, with its commit time."""
        ...

    def history(self, head: str, since: int) -> list[CommitTime]:
        """``head``'s first-parent history back to about ``since`` (seconds, UTC), with each
        commit's time, oldest first. Commits older than ``since`` may be included."""
        ...

    def materialise(self, commit: str, path: Path) -> None:
        """Put ``commit``'s tree in ``path`` (which does not exist yet)."""
        ...

    def fetch(self, remote: str, branch: str) -> str:
        """Bring ``branch`` from ``remote`` in; the full hash of its new head."""
        ...

    def followed_revisions(self, remote: str, branch: str) -> str:
        """The range that names the fetched branch (git: ``<remote>/<branch>``)."""
        ...


def _run(argv: list[str], what: str) -> str:
    """Run a version-control command; its failure is the user's (a wrong name, a wrong path)."""
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError(f"{what}: {proc.stderr.strip() or f'exit {proc.returncode}'}")
    return proc.stdout


class GitRepository:
    """A git repository; a commit's tree is a detached worktree."""

    kind = "git"

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()

    def git(self, *args: str) -> str:
        """Run a git command here and return its stdout; errors become UsageError."""
        return _run(["git", "-C", str(self.path), *args], f"git {' '.join(args)} in {self.path}")

    def list_commits(self, revisions: str) -> list[str]:
        return self.git("rev-list", "--reverse", "--first-parent", revisions).split()

    def resolve(self, revision: str) -> str:
        return self.git("rev-parse", f"{revision}^{{commit}}").strip()

    def commit_time(self, revision: str) -> CommitTime:
        sha, ct = self.git("show", "-s", "--format=%H %ct", f"{revision}^{{commit}}").split()
        return CommitTime(sha, int(ct))

    def history(self, head: str, since: int) -> list[CommitTime]:
        # Committer time (%ct): when the commit entered the history, as FAI-PEP's range
        # query reads it. --since stops the walk early; it is an optimisation, not the rule.
        out = self.git("log", "--first-parent", "--reverse", f"--since=@{since}",
                       "--format=%H %ct", head)
        return [CommitTime(sha, int(ct)) for sha, ct in (line.split() for line in
                                                          out.splitlines() if line.strip())]

    def materialise(self, commit: str, path: Path) -> None:
        self.git("worktree", "add", "--detach", "--force", str(path), commit)

    def fetch(self, remote: str, branch: str) -> str:
        proc = subprocess.run(
            ["git", "-C", str(self.path), "fetch", "--quiet", remote,
             f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}"],
            capture_output=True, text=True)
        if proc.returncode != 0:
            said = proc.stderr.strip().splitlines()
            raise InfrastructureError(f"git fetch {remote} {branch} in {self.path} failed: "
                                      f"{said[-1] if said else f'exit {proc.returncode}'}")
        return self.resolve(f"refs/remotes/{remote}/{branch}")

    def followed_revisions(self, remote: str, branch: str) -> str:
        return f"{remote}/{branch}"


# Characters that make a revision text a revset rather than one name.
_REVSET = re.compile(r"[()&|:~^!]|\s")


class MercurialRepository:
    """A Mercurial repository; a commit's tree is an ``hg archive`` of it (files only, no
    ``.hg``: a build that asks Mercurial about itself reads ``.hg_archival.txt``)."""

    kind = "hg"

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()

    def hg(self, *args: str) -> str:
        """Run an hg command here, untouched by the user's hgrc aliases and defaults."""
        return _run(["hg", "--cwd", str(self.path), "--config", "ui.interactive=no", *args],
                    f"hg {' '.join(args)} in {self.path}")

    @staticmethod
    def _name(revision: str) -> str:
        return "." if revision == "HEAD" else revision

    def _revset(self, revisions: str) -> str:
        """``A..B`` or a name as a revset of first-parent commits, in git's meaning."""
        if ".." in revisions and not _REVSET.search(revisions):
            base, _, head = revisions.partition("..")
            head = self._name(head or "HEAD")
            return (f"_firstancestors({head!r}) - ::{self._name(base)!r}")
        if _REVSET.search(revisions):
            return revisions
        return f"_firstancestors({self._name(revisions)!r})"

    def list_commits(self, revisions: str) -> list[str]:
        return self.hg("log", "-r", f"sort({self._revset(revisions)}, rev)",
                       "-T", "{node}\n").split()

    def resolve(self, revision: str) -> str:
        nodes = self.hg("log", "-r", self._name(revision), "-l", "1", "-T", "{node}\n").split()
        if not nodes:
            raise UsageError(f"{revision!r} names no commit in {self.path}")
        return nodes[0]

    def commit_time(self, revision: str) -> CommitTime:
        node, when, _ = self.hg("log", "-r", self._name(revision), "-l", "1",
                                "-T", "{node} {date|hgdate}\n").split()
        return CommitTime(node, int(float(when)))

    def history(self, head: str, since: int) -> list[CommitTime]:
        # {date|hgdate} is "<UTC seconds> <offset>": the first field is already UTC.
        out = self.hg("log", "-r", f"sort(_firstancestors({head!r}), rev)",
                      "-T", "{node} {date|hgdate}\n")
        times = [CommitTime(node, int(float(when))) for node, when, _ in
                 (line.split() for line in out.splitlines() if line.strip())]
        return [c for c in times if c.time >= since]

    def materialise(self, commit: str, path: Path) -> None:
        # Archived beside its final place and renamed in, so an interrupted archive never
        # looks like a commit's tree.
        partial = path.with_name(f".{path.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        self.hg("archive", "-r", commit, "-t", "files", str(partial))
        partial.rename(path)

    def fetch(self, remote: str, branch: str) -> str:
        proc = subprocess.run(
            ["hg", "--cwd", str(self.path), "--config", "ui.interactive=no", "pull",
             "--quiet", "-b", branch, remote], capture_output=True, text=True)
        if proc.returncode != 0:
            said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            raise InfrastructureError(f"hg pull -b {branch} {remote} in {self.path} failed: "
                                      f"{said[-1] if said else f'exit {proc.returncode}'}")
        return self.resolve(branch)

    def followed_revisions(self, remote: str, branch: str) -> str:
        # A pull brings the branch itself in (no remote-tracking names): its name then names
        # its newest head.
        return branch


def detect_kind(path: Path) -> str:
    """``git`` or ``hg``, from the repository's own directory; a UsageError for neither."""
    for parent in (path.resolve(), *path.resolve().parents):
        if (parent / ".hg").is_dir():
            return "hg"
        if (parent / ".git").exists():  # a worktree's .git is a file
            return "git"
    raise UsageError(f"{path} is neither a git nor a Mercurial repository (no .git or .hg); "
                     f"give --vcs git or --vcs hg")


def open_repository(path: Path, kind: str | None = None) -> Repository:
    """The repository at ``path``, kept by ``kind`` (``git``/``hg``), or as detected."""
    kind = kind or detect_kind(path)
    if kind == "git":
        return GitRepository(path)
    if kind == "hg":
        if shutil.which("hg") is None:
            raise UsageError(f"{path} is a Mercurial repository and hg is not installed "
                             f"(Debian: apt-get install mercurial)")
        return MercurialRepository(path)
    raise UsageError(f"unknown version-control system {kind!r}: choose one of "
                     f"{', '.join(KINDS)}")
