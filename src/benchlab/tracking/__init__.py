"""Continuous benchmarking of a git or Mercurial history: builds per commit (built ahead of the
walk off-host), change points, bisection, FAI-PEP's weekly reference."""

from __future__ import annotations

from benchlab.tracking.changepoint import ChangePoint, find_change_points
from benchlab.tracking.gitrepo import BuildCache, list_commits
from benchlab.tracking.tracker import CommitPoint, TrackReport, TrackSettings, track_commits

__all__ = [
    "BuildCache",
    "ChangePoint",
    "CommitPoint",
    "TrackReport",
    "TrackSettings",
    "find_change_points",
    "list_commits",
    "track_commits",
]
