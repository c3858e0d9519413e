"""A pytest plugin: tests marked ``exclusive`` run with no other test beside them.

The suite runs in parallel workers (pytest-xdist, ``-n`` in pyproject.toml). A few tests need the
whole machine: bench smokes whose figures compare timings, the lab's chaos smoke that kills and
restarts processes on a schedule. Such a test carries ``@pytest.mark.exclusive``; every test
holds a reader-writer lock shared by the workers of one run, an ``exclusive`` test as the writer,
every other test as a reader, so an exclusive test waits for the tests running in other workers
to end and keeps them from starting until it is done. Exclusive tests are moved to the end of
the collection, so they run when the rest of the suite is done and little waits on them;
modules with slow tests are moved to the front, so no long module is handed out last.

The lock is two ``flock`` files in the run's shared temporary folder: ``turnstile`` is taken
briefly by a reader before its read lock and held by a writer while it waits, so readers that
keep coming cannot starve a writer. Without xdist both locks are free and cost nothing.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Generator, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

MARKER = "exclusive"


def workers_folder(config: pytest.Config) -> Path | None:
    """Under xdist, a folder every worker of this run sees and no other run does; else None.

    xdist gives each worker a basetemp inside the controller's (``<basetemp>/gw0``): this is
    the controller's, which pytest's own retention of old basetemps removes.
    """
    if not hasattr(config, "workerinput"):
        return None
    return Path(config.option.basetemp).parent


def _lock_dir(config: pytest.Config) -> Path | None:
    shared = workers_folder(config)
    if shared is None:
        return None
    folder = shared / "exclusive-lock"
    folder.mkdir(exist_ok=True)
    return folder


@contextmanager
def file_lock(path: Path, mode: int = fcntl.LOCK_EX) -> Iterator[None]:
    """Hold ``flock`` ``mode`` on ``path`` (made if missing) for the block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@contextmanager
def held(folder: Path, exclusive: bool) -> Iterator[None]:
    """Hold the run's lock for one test: as the writer when ``exclusive``, else as a reader."""
    turnstile, room = folder / "turnstile", folder / "room"
    if exclusive:
        with file_lock(turnstile, fcntl.LOCK_EX), file_lock(room, fcntl.LOCK_EX):
            yield
        return
    with ExitStack() as stack:
        # The read lock outlives the turnstile, which is let go as soon as it is taken.
        with file_lock(turnstile, fcntl.LOCK_EX):
            stack.enter_context(file_lock(room, fcntl.LOCK_SH))
        yield


@contextmanager
def one_heavy_setup(config: pytest.Config) -> Iterator[None]:
    """Hold the run's lock for heavy background work (a zoo export begun as the run starts):
    one such piece at a time across the workers, so two never start side by side beside the
    workers' own tests. Without xdist it is free."""
    folder = _lock_dir(config)
    if folder is None:
        yield
        return
    with file_lock(folder / "heavy-setup", fcntl.LOCK_EX):
        yield


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with slow tests first, exclusive tests last.

    The workers take whole modules (``--dist loadfile``), in this order: the long modules are
    handed out while the other worker still has work, so the run does not end waiting on one
    of them. Runs after any reordering (pytest-random-order's shuffle included), and is
    stable: modules keep their order within each class, tests theirs within a module.
    """
    slow_modules = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: (item.get_closest_marker(MARKER) is not None,
                                 item.path not in slow_modules))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator:
    folder = _lock_dir(item.config)
    if folder is None:
        return (yield)
    with held(folder, item.get_closest_marker(MARKER) is not None):
        return (yield)
