"""FAI-PEP's weekly control commit: the reference is the first commit of the week, in UTC.

FAI-PEP's ``repo_driver.py --base_commit``: "If not specified, the default is the first
commit in the week in UTC timezone. Even if specified, the control is the later of the
specified commit and the commit at the start of the week." Its ``_getControlCommit`` starts
the week on Monday 00:00 UTC (``dt - timedelta(days=dt.weekday())``, at midnight) of the
*treatment* commit's time, not of the clock; benchlab does the same with the newest commit of
the tracked range, so the rule gives the same answer whenever it is run (``track --follow``
re-decides it every pass, and a new week brings a new reference).

Times are commit times read from the repository (git's committer time ``%ct``, Mercurial's
``{date|hgdate}``), in UTC seconds: a commit made on Monday 08:30 at +0900 is Sunday 23:30 UTC,
last week's. (FAI-PEP reads the author time ``%at`` for the base commit and the committer time
for the week's commits; benchlab reads the committer time for both.)
"""

from __future__ import annotations

from collections.abc import Sequence

from benchlab.errors import UsageError
from benchlab.tracking.vcs import CommitTime, Repository

__all__ = ["WEEK_SECONDS", "week_start", "weekly_reference", "weekly_reference_in"]

WEEK_SECONDS = 7 * 24 * 3600
_DAY = 24 * 3600
# 1970-01-05, the first Monday of the epoch: weeks are counted from it.
_FIRST_MONDAY = 4 * _DAY


def week_start(utc_seconds: int) -> int:
    """The Monday 00:00 UTC that starts the week holding ``utc_seconds``."""
    return utc_seconds - (utc_seconds - _FIRST_MONDAY) % WEEK_SECONDS


def weekly_reference(history: Sequence[CommitTime], reference_time: int,
                     base: CommitTime | None = None) -> str:
    """The control commit of FAI-PEP's rule: ``base`` when it is in ``reference_time``'s
    week (the later of the two), else the first commit of ``history`` (oldest first) made in
    that week or after it."""
    start = week_start(reference_time)
    if base is not None and base.time >= start:
        return base.commit
    for commit in history:
        if commit.time >= start:
            return commit.commit
    raise UsageError("no commit was made in the week of the newest commit "
                     "(its history has none at or after Monday 00:00 UTC)")


def weekly_reference_in(repository: Repository, head: str, base: str | None = None) -> str:
    """:func:`weekly_reference` for ``head``'s week, with the times read from ``repository``."""
    newest = repository.commit_time(head)
    # A day's slack below the week's start: commit times along a history are not monotonic.
    history = repository.history(newest.commit, since=week_start(newest.time) - _DAY)
    based = repository.commit_time(base) if base is not None else None
    return weekly_reference([*history, newest], newest.time, based)
