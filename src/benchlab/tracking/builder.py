"""``track``'s builder: one thread that builds commits, ahead of the walk when it may.

FAI-PEP's ``repo_driver.py --same_host``: "Specify whether the build and benchmark run are on
the same host. If so, the build cannot be done in parallel with the benchmark run." When the
device is another machine (a phone, a board), the next commit of the walk is built here while
the current one is measured there, and the walk waits only for what is left of that build; on
the same host a build would steal the cores and the caches of the measurement, so each build
runs alone, just before its commit is measured.

All builds, ahead or not, go through one builder thread: two builds never run at once (a
git worktree add and a compiler in the same cache would race), and the walk's own thread only
waits. A build that fails in the background is kept, and raised as that commit's
:class:`~benchlab.errors.CommitFailedError` when the walk reaches it; a build still running
when the track stops is cancelled, and its commit is not marked built.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from benchlab.tracking.gitrepo import Build, BuildCache

__all__ = ["BuildTiming", "Builder"]


@dataclass(frozen=True, slots=True)
class BuildTiming:
    """When one commit's build ran, in seconds since the track began; ``fresh`` is False when
    it was built before (by an earlier track) and nothing ran; ``ahead`` when the builder
    started it before the walk asked for it (while another commit was measured)."""

    started: float
    ended: float
    fresh: bool
    ahead: bool

    @property
    def seconds(self) -> float:
        """How long the build took (0 for one built before)."""
        return self.ended - self.started if self.fresh else 0.0


class Builder:
    """Builds commits one at a time on a thread of its own; ``parallel`` lets it build the
    walk's next commit while the current one is measured (:meth:`build_ahead`)."""

    def __init__(self, cache: BuildCache, *, parallel: bool, origin: float | None = None):
        self.cache = cache
        self.parallel = parallel
        self.origin = time.monotonic() if origin is None else origin
        self._cancel = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchlab-build")
        self._builds: dict[str, Future[tuple[Build, BuildTiming]]] = {}
        self._ahead: set[str] = set()

    def _build(self, commit: str) -> tuple[Build, BuildTiming]:
        started = time.monotonic() - self.origin
        built = self.cache.build(commit, self._cancel)
        ended = time.monotonic() - self.origin
        return built, BuildTiming(started, ended, built.fresh, commit in self._ahead)

    def _submit(self, commit: str) -> Future[tuple[Build, BuildTiming]]:
        if commit not in self._builds:
            self._builds[commit] = self._pool.submit(self._build, commit)
        return self._builds[commit]

    def build_ahead(self, commit: str) -> None:
        """Start ``commit``'s build now if builds may overlap measurements; else nothing."""
        if self.parallel and commit not in self._builds:
            self._ahead.add(commit)
            self._submit(commit)

    def build(self, commit: str) -> tuple[Build, BuildTiming]:
        """``commit``'s build, waiting for it (building it now if nobody started it); a failed
        build raises its :class:`~benchlab.errors.CommitFailedError` here, every time."""
        return self._submit(commit).result()

    def close(self) -> None:
        """Cancel what is building or waiting to be built, and wait for the thread to end."""
        self._cancel.set()
        for future in self._builds.values():
            future.cancel()
        self._pool.shutdown(wait=True)

    def __enter__(self) -> Builder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
