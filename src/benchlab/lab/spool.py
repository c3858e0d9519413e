"""A lab job's store that rides out a database outage: it waits, and spools what cannot wait.

A job process stores each result in the lab's PostgreSQL as the result finishes. While the
database is away (restarted for an upgrade, failing over), :class:`SpoolingStore` writes the
result to the job's spool folder on the worker's disk instead and the sweep goes on measuring;
every other store call (start the run, read what is done, finish it) waits for the database,
up to the store's patience. Spooled results are delivered before the run is read back or
finished, and by the worker for a job process that died holding some (:func:`deliver_spool`).

Never twice: the store keeps one result per (run, job key), so a file delivered again (the
process died between the insert and the delete) is a no-op.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from benchlab.errors import StoreUnavailable
from benchlab.schema.result import Result
from benchlab.store import ResultStore, open_store

__all__ = [
    "SpoolingStore",
    "deliver_spool",
    "job_spool_dir",
    "spool_root",
    "spooled_files",
    "spooled_jobs",
]

_log = logging.getLogger("benchlab.lab.spool")

P = ParamSpec("P")
T = TypeVar("T")


def spool_root(db_url: str, cache_dir: Path | None = None) -> Path:
    """This host's spool folder for one lab (by a digest of its database URL)."""
    digest = hashlib.sha256(db_url.encode()).hexdigest()[:12]
    base = cache_dir or Path(os.path.expanduser("~/.cache/benchlab"))
    return base / "lab-spool" / digest


def job_spool_dir(db_url: str, job_id: int, cache_dir: Path | None = None) -> Path:
    """Where one job's undelivered results wait."""
    return spool_root(db_url, cache_dir) / f"job-{job_id}"


def spooled_files(folder: Path) -> Iterator[Path]:
    """One job's spooled results, oldest first."""
    if not folder.is_dir():
        return iter(())
    return iter(sorted(folder.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name)))


def spooled_jobs(root: Path) -> list[Path]:
    """The job folders under a lab's spool root that still hold something."""
    return sorted(p for p in root.glob("job-*") if p.is_dir()) if root.is_dir() else []


def _patiently(method: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(method)
    def call(self: SpoolingStore, *args: Any, **kwargs: Any) -> T:
        return self.patiently(method, self, *args, **kwargs)
    return call


def _delivering(method: Callable[..., T]) -> Callable[..., T]:
    # Reading a run back or closing it must see the results that waited in the spool.
    @functools.wraps(method)
    def call(self: SpoolingStore, *args: Any, **kwargs: Any) -> T:
        self.patiently(self.deliver)
        return self.patiently(method, self, *args, **kwargs)
    return call


class SpoolingStore(ResultStore):
    """A :class:`ResultStore` for one lab job; see the module's docstring.

    ``patience_s`` bounds how long a call waits for the database before it raises
    :class:`StoreUnavailable`; ``pause_s`` is the pause between tries.
    """

    def __init__(self, store: ResultStore, spool_dir: Path, *, patience_s: float = 900.0,
                 pause_s: float = 1.0) -> None:
        """Take over ``store``'s engine (the store must not be used on its own afterwards)."""
        super().__init__(store.engine)
        self.spool_dir = spool_dir
        self.patience_s = patience_s
        self.pause_s = pause_s
        self.spooled = 0
        """Results written to the spool by this store (delivered later or not)."""

    @classmethod
    def open(cls, url: str, spool_dir: Path, *, patience_s: float = 900.0,
             pause_s: float = 1.0) -> SpoolingStore:
        """Open the lab's store, waiting up to ``patience_s`` for its database."""
        deadline = time.monotonic() + patience_s
        while True:
            try:
                store = open_store(url)
                break
            except StoreUnavailable:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(pause_s)
        return cls(store, spool_dir, patience_s=patience_s, pause_s=pause_s)

    def patiently(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``call(*args, **kwargs)``, tried again while the database is unavailable."""
        deadline = time.monotonic() + self.patience_s
        said = False
        while True:
            try:
                value = call(*args, **kwargs)
            except StoreUnavailable as exc:
                if time.monotonic() >= deadline:
                    raise
                if not said:
                    _log.warning("waiting for the lab's database: %s", exc)
                    said = True
                time.sleep(self.pause_s)
                continue
            if said:
                _log.warning("the lab's database is back")
            return value

    def add_result(self, run_id: Any, result: Result) -> int:
        """Store the result, or spool it when the database is away (returns 0 then)."""
        try:
            stored = super().add_result(run_id, result)
        except StoreUnavailable as exc:
            self._spool(run_id, result)
            _log.warning("database unavailable (%s); %s spooled in %s", exc,
                         result.identity.label, self.spool_dir)
            return 0
        try:
            self.deliver()
        except StoreUnavailable:
            pass  # gone again just now: the spool waits for the next result or the end
        return stored

    def deliver(self) -> int:
        """Store every spooled result of this job, deleting each once stored; returns how many."""
        return deliver_spool(self, self.spool_dir)

    def _spool(self, run_id: Any, result: Result) -> None:
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(result.identity.key.encode()).hexdigest()[:16]
        path = self.spool_dir / f"{name}.json"
        temporary = path.with_suffix(".part")
        temporary.write_text(json.dumps({"run_id": run_id, "result": result.to_dict()}))
        os.replace(temporary, path)  # a reader sees the whole file or none
        self.spooled += 1

    start_run = _patiently(ResultStore.start_run)
    ensure_run = _patiently(ResultStore.ensure_run)
    find_resumable_run = _patiently(ResultStore.find_resumable_run)
    latest_run = _patiently(ResultStore.latest_run)
    resume_run = _patiently(ResultStore.resume_run)
    get_run = _patiently(ResultStore.get_run)
    finished_job_keys = _delivering(ResultStore.finished_job_keys)
    results = _delivering(ResultStore.results)
    finish_run = _delivering(ResultStore.finish_run)
    mark_interrupted = _delivering(ResultStore.mark_interrupted)


def deliver_spool(store: ResultStore, folder: Path) -> int:
    """Store the results spooled under ``folder`` (oldest first), deleting each once stored.

    Raises :class:`StoreUnavailable` when the database goes away meanwhile; what was delivered
    is gone from the spool and the rest waits. An unreadable file is moved aside (``.bad``).
    """
    delivered = 0
    for path in spooled_files(folder):
        try:
            payload = json.loads(path.read_text())
            run_id, result = payload["run_id"], Result.from_dict(payload["result"])
        except FileNotFoundError:
            continue  # delivered by the job process or the worker a moment ago
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _log.error("unreadable spooled result %s (%s); kept as .bad", path, exc)
            path.rename(path.with_suffix(".bad"))
            continue
        ResultStore.add_result(store, run_id, result)
        path.unlink(missing_ok=True)
        delivered += 1
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    return delivered
