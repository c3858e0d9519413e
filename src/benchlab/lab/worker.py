"""A host's device agent (``benchlab lab worker``): registers its devices, runs their jobs.

One agent per host. It enumerates the host itself, the adb phones attached and the ssh boards
of its config, registers each with typed properties, and runs one procrastinate worker per
device (concurrency 1) on ``device:<id>`` plus the queue of every pool whose rule the device
matches. A device that is quarantined, unhealthy or unreachable has no worker, so it takes
nothing. Each job runs in its own process (:mod:`benchlab.lab.execute`) that dies with the
agent. A periodic task on ``lab:maintenance`` re-queues jobs whose worker stopped
heartbeating (procrastinate's heartbeat; the task has a queueing lock and no device lock,
procrastinate #1408), unless the job's device still vouches for it.

The database may restart or fail over under a running agent. Every loop outlives it: a
procrastinate worker that stopped on a lost connection is started again, the job state the
agent writes waits for the database to return, and a job process spools the results it cannot
store (:mod:`benchlab.lab.spool`); the agent delivers what a dead job process left there.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from benchlab.errors import StoreError, StoreUnavailable
from benchlab.lab.devices import (
    Device,
    get_device,
    heartbeat,
    list_pools,
    matching_pools,
    record_execution,
    register_device,
    set_health,
    set_pools,
    set_state,
)
from benchlab.lab.jobs import JobSummary, get_job, set_job
from benchlab.lab.outage import Outage, until_stored
from benchlab.lab.pools import device_queue, pool_queue
from benchlab.lab.probe import DeviceEntry, health_check, probe
from benchlab.lab.queue import (
    MAINTENANCE_QUEUE,
    REQUEUE_TASK,
    RUN_TASK,
    Lab,
    make_app,
    requeue,
    store_url,
)
from benchlab.lab.spool import deliver_spool, job_spool_dir, spool_root, spooled_jobs
from benchlab.store import ResultStore, open_store

__all__ = ["WorkerSettings", "run_agent"]

_log = logging.getLogger("benchlab.lab.worker")
T = TypeVar("T")
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class WorkerSettings:
    """How an agent behaves; the defaults suit a real lab, tests shorten the times."""

    host: str = field(default_factory=socket.gethostname)
    heartbeat_s: float = 5.0
    """How often devices are vouched for (and procrastinate's worker heartbeat)."""
    stalled_after_s: float = 30.0
    """A job whose worker has not heartbeat for this long is re-queued."""
    requeue_cron: str = "* * * * * */10"
    """When the stalled-job check runs (croniter, seconds last)."""
    health_every_s: float = 300.0
    job_timeout_s: float = 3 * 3600.0
    poll_s: float = 2.0
    """How often a device's eligibility (quarantine, health, reachability) is re-read."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra properties given to every device of this host (``lane=nightly``), for pools."""
    retry_s: float = 2.0
    """The pause between tries while the database is unavailable."""
    grace_s: float = 60.0
    """On SIGTERM, how long a running job may take to finish before it is handed back."""


def _die_with_parent() -> None:
    # The job process must not outlive a worker killed with SIGKILL: its attempt is re-queued
    # and a survivor would write beside the next attempt.
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class _Agent:
    """The running agent: one procrastinate App, one worker task per eligible device."""

    def __init__(self, url: str, devices: Sequence[DeviceEntry], settings: WorkerSettings):
        self.url = url
        self.devices = {d.id: d for d in devices}
        self.settings = settings
        self.outage = Outage()
        self.store = self._open_store()
        self.app = make_app(url)
        self.lab = Lab(url, self.store, self.app)
        self.workers: dict[str, tuple[asyncio.Task[None], tuple[str, ...]]] = {}
        self.busy: set[str] = set()
        self._register_tasks()

    def _open_store(self) -> ResultStore:
        # An agent started while the database is away (a host booting during a database
        # upgrade) waits for it instead of exiting.
        while True:
            try:
                store = open_store(store_url(self.url))
            except StoreUnavailable as exc:
                self.outage.down(exc)
                time.sleep(self.settings.retry_s)
                continue
            self.outage.up()
            return store

    def _register_tasks(self) -> None:
        app = self.app

        @app.task(name=RUN_TASK, pass_context=True)
        async def run_job(context: Any, lab_job: int) -> None:
            await self.run_job(context.additional_context["device_id"], lab_job)

        @app.periodic(cron=self.settings.requeue_cron, periodic_id="requeue-stalled")
        @app.task(name=REQUEUE_TASK, queue=MAINTENANCE_QUEUE, queueing_lock="requeue-stalled")
        async def requeue_stalled(timestamp: int) -> None:
            await self.requeue_stalled()

    # Jobs

    async def run_job(self, device_id: str, lab_job: int) -> None:
        """Run one lab job on ``device_id``, in a child process, and record its outcome."""
        entry = self.devices[device_id]
        job = await self._stored(get_job, self.store, lab_job)
        if job.status in ("cancelled", "finished", "failed"):
            # Cancelled, or a second ticket for a job that already ended (its first ticket's
            # status could not be written while the database was away): nothing to do.
            return
        if not await asyncio.to_thread(self._eligible, device_id):
            # Quarantined (or found unhealthy) after its worker took the ticket: hand the job
            # back at once; the supervisor stops this device's worker within a poll.
            device = await self._stored(get_device, self.store, device_id)
            why = (f"device {device_id} is quarantined: {device.quarantine_reason}"
                   if device.quarantined else f"device {device_id} is {device.health}"
                   f"/{device.state}")
            await self._stored(requeue, self.lab, job, reason=why)
            return
        if job.request.kind == "noop":
            await self._noop(entry, job)
            return
        self.busy.add(device_id)
        try:
            async with self._device_lock(device_id):
                await self._run_locked(entry, job)
        finally:
            self.busy.discard(device_id)

    async def _noop(self, entry: DeviceEntry, job: Any) -> None:
        # The lab's own probe: no child process, no benchmark. It measures the queue itself
        # (bench/lab.py) and leaves one "noop" event per execution, so a test can prove that
        # no job ran twice.
        await self._stored(set_job, self.store, job.id, status="running",
                                device_id=entry.id, started_at=time.time(),
                                attempts=job.attempts + 1)
        await asyncio.sleep(float(job.request.options.get("sleep_s", 0.0)))
        await self._stored(record_execution, self.store, entry.id, job.id)
        await self._stored(set_job, self.store, job.id, status="finished",
                                reason="no-op", finished_at=time.time())

    @contextlib.asynccontextmanager
    async def _device_lock(self, device_id: str):  # noqa: ANN202
        # Pool jobs carry no procrastinate lock (the device is unknown when they are
        # deferred); a session advisory lock on the device keeps two agents that serve the
        # same device from overlapping, and dies with a killed agent's connection.
        import psycopg

        from benchlab.lab.queue import conninfo

        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(conninfo(self.url),
                                                             autocommit=True)
                await conn.execute("SELECT pg_advisory_lock(hashtext(%s))",
                                   (f"device:{device_id}",))
                break
            except psycopg.OperationalError as exc:
                self.outage.down(exc)
                await asyncio.sleep(self.settings.retry_s)
        try:
            yield
        finally:
            with contextlib.suppress(psycopg.Error):  # a restart may have closed it already
                await conn.close()

    async def _stored(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``call`` in a thread, tried until the database answers: a job's state must land."""
        return await until_stored(self.outage, self.settings.retry_s, call, *args, **kwargs)

    async def _run_locked(self, entry: DeviceEntry, job: Any) -> None:
        store = self.store
        await self._stored(set_job, store, job.id, status="running", device_id=entry.id,
                                started_at=time.time(), attempts=job.attempts + 1,
                                reason=f"running on {entry.id}")
        await self._stored(set_state, store, entry.id, "busy", job_id=job.id)
        try:
            code, out, err = await self._child(entry, job.id)
        except asyncio.CancelledError:
            # The agent is stopping and the grace period is over: the job process is gone;
            # hand the job back so another attempt resumes its run (results stored stay).
            await self._stored(requeue, self.lab, await self._stored(get_job, store, job.id),
                               reason=f"worker on {self.settings.host} stopped before the job "
                               "finished; handed back to its queue")
            await self._stored(set_state, store, entry.id, "idle")
            raise
        # A job process that died with results in its spool (the database was away at its
        # end) leaves them to its worker.
        await self._stored(deliver_spool, store, job_spool_dir(self.url, job.id))
        summary = JobSummary.read(out)
        if code != 0:
            # A failure may be the device's, not the job's: if it went away, fail this attempt
            # and put the job back (a pool job: any other matching device may take it).
            reachable, why, *_ = await asyncio.to_thread(probe, entry)
            if not reachable:
                await self._stored(set_state, store, entry.id, "offline",
                                   reason=f"lost during job {job.id}: {why}", job_id=job.id)
                await self._stored(
                    requeue, self.lab, await self._stored(get_job, store, job.id),
                    reason=f"device {entry.id} lost mid-job ({why}); re-queued", new_run=True)
                return
        if code in (0, 1) and summary is not None and summary.error is None:
            extra = {} if summary.report is None else {"report_json": json.dumps(
                dict(summary.report))}
            await self._stored(set_job, store, job.id, status="finished",
                               reason=summary.reason(job.request.kind),
                               finished_at=time.time(), **extra)
        else:
            detail = (summary.error if summary else None) or _tail(err) or f"exit code {code}"
            await self._stored(set_job, store, job.id, status="failed",
                               reason=f"job process failed: {detail}", finished_at=time.time())
        await self._stored(set_state, store, entry.id, "idle")

    async def _child(self, entry: DeviceEntry, job_id: int) -> tuple[int | None, str, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchlab.lab.execute", "--db", self.url, "--job",
            str(job_id), "--target", entry.target,
            "--patience", str(self.settings.job_timeout_s), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, preexec_fn=_die_with_parent,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.settings.job_timeout_s)
        except asyncio.CancelledError:
            proc.kill()
            await proc.wait()
            raise
        except asyncio.TimeoutError:
            proc.kill()
            out, err = await proc.communicate()
            err += f"\njob timed out after {self.settings.job_timeout_s:.0f} s".encode()
            return None, out.decode(errors="replace"), err.decode(errors="replace")
        return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")

    async def requeue_stalled(self) -> None:
        """Re-queue jobs whose worker stopped heartbeating (killed host, lost network).

        A procrastinate worker stops its heartbeat when it loses the database and waits for
        its running job; the job's device, vouched for by its agent, then still says the job
        is alive, and it is left to finish.
        """
        manager = self.app.job_manager
        stalled = await manager.get_stalled_jobs(
            seconds_since_heartbeat=self.settings.stalled_after_s, task_name=RUN_TASK)
        for stale in stalled:
            lab_job = stale.task_kwargs.get("lab_job")
            if lab_job is not None and await asyncio.to_thread(self._still_running, int(lab_job)):
                continue
            await manager.retry_job(stale)
            if lab_job is not None:
                await asyncio.to_thread(
                    set_job, self.store, int(lab_job), status="waiting", device_id=None,
                    reason="its worker stopped heartbeating; re-queued")
            _log.warning("re-queued stalled job %s", stale.id)

    def _still_running(self, lab_job: int) -> bool:
        """Whether a device whose heartbeat is fresh says it is running ``lab_job``."""
        job = get_job(self.store, lab_job)
        if job.status != "running" or not job.device_id:
            return False
        device = get_device(self.store, job.device_id)
        return (device.current_job == lab_job
                and device.heartbeat_age_s < self.settings.stalled_after_s)

    # Devices

    async def register_all(self) -> None:
        """Register every device with its properties and the pools it matches."""
        pools = await self._stored(list_pools, self.store)
        for entry in self.devices.values():
            reachable, reason, props, state, _ = await asyncio.to_thread(probe, entry)
            props = {**props, **self.settings.labels}
            await self._stored(
                register_device, self.store, device_id=entry.id, host=self.settings.host,
                kind=entry.kind, target=entry.target, properties=props,
                pools=matching_pools(props, pools), device_state=state,
                offline_reason="" if reachable else reason or "did not answer its probe")

    async def deliver_leftovers(self) -> None:
        """Store what job processes of an earlier agent on this host left in the spool."""
        for folder in spooled_jobs(spool_root(self.url)):
            delivered = await self._stored(deliver_spool, self.store, folder)
            if delivered:
                _log.warning("delivered %d spooled results from %s", delivered, folder)

    def _eligible(self, device_id: str, device: Device | None = None) -> bool:
        device = device or get_device(self.store, device_id)
        return not device.quarantined and device.health != "bad" and device.state != "offline"

    def _standing(self, device_id: str) -> tuple[bool, tuple[str, ...]]:
        """Whether the device may take jobs, and the queues it should listen on (one read)."""
        device = get_device(self.store, device_id)
        pools = matching_pools(device.properties, list_pools(self.store))
        queues = (device_queue(device_id), *(pool_queue(p) for p in pools))
        return self._eligible(device_id, device), queues

    async def supervise(self, device_id: str) -> None:
        """Keep a procrastinate worker running for the device exactly while it is eligible."""
        while True:
            try:
                await self._supervise_once(device_id)
            except StoreUnavailable as exc:
                # The device's queue worker stops by itself (its connection is gone) and is
                # started again once the database answers.
                self.outage.down(exc)
            except StoreError as exc:
                _log.error("device %s: %s", device_id, exc)
            await asyncio.sleep(self.settings.poll_s)

    async def _supervise_once(self, device_id: str) -> None:
        running = self.workers.get(device_id)
        if running and running[0].done():
            # procrastinate stops a worker whose connection broke (after its running job):
            # forget it, and start a new one below once the device is known eligible.
            self._reap(f"device {device_id}", running[0])
            del self.workers[device_id]
        eligible, queues = await asyncio.to_thread(self._standing, device_id)
        running = self.workers.get(device_id)
        if running and running[1] != queues:
            await asyncio.to_thread(set_pools, self.store, device_id,
                                    [q.removeprefix("pool:") for q in queues[1:]])
        if running and (not eligible or running[1] != queues) and device_id not in self.busy:
            await self._stop_worker(device_id)
            running = None
        if eligible and running is None:
            task = asyncio.create_task(self.app.run_worker_async(
                queues=list(queues), name=f"device:{device_id}", concurrency=1,
                additional_context={"device_id": device_id}, install_signal_handlers=False,
                update_heartbeat_interval=self.settings.heartbeat_s,
                stalled_worker_timeout=self.settings.stalled_after_s,
                shutdown_graceful_timeout=self.settings.grace_s,
                listen_notify=True, fetch_job_polling_interval=self.settings.poll_s))
            self.workers[device_id] = (task, queues)
        if not eligible:
            await self._maybe_back_online(device_id)

    @staticmethod
    def _reap(what: str, task: asyncio.Task[None]) -> None:
        failure = None if task.cancelled() else task.exception()
        _log.warning("%s: its queue worker stopped (%s); starting another", what,
                     f"{type(failure).__name__}: {failure}".strip() if failure
                     else "its connection broke")

    async def _stop_worker(self, device_id: str) -> None:
        task, _ = self.workers.pop(device_id)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    async def _maybe_back_online(self, device_id: str) -> None:
        device = await asyncio.to_thread(get_device, self.store, device_id)
        if device.state != "offline":
            return
        reachable, *_ = await asyncio.to_thread(probe, self.devices[device_id])
        if reachable:
            await asyncio.to_thread(set_state, self.store, device_id, "idle",
                                    reason="reachable again")

    async def heartbeats(self) -> None:
        """Vouch for every device every ``heartbeat_s`` (with its state, cheaply read).

        While the database is away nothing is vouched for, so the registry shows the devices'
        heartbeats ageing and, past a minute, the devices offline.
        """
        while True:
            try:
                for device_id in self.devices:
                    await asyncio.to_thread(heartbeat, self.store, device_id)
                self.outage.up()
            except StoreUnavailable as exc:
                self.outage.down(exc)
            except StoreError as exc:
                _log.error("heartbeat not recorded: %s", exc)
            await asyncio.sleep(self.settings.heartbeat_s)

    async def health_checks(self) -> None:
        """Liveness plus the known benchmark on each idle device, every ``health_every_s``."""
        while True:
            for device_id, entry in self.devices.items():
                if device_id in self.busy:
                    continue
                health, reason, state = await asyncio.to_thread(health_check, entry)
                await self._stored(set_health, self.store, device_id, health, reason)
                if state:
                    await self._stored(heartbeat, self.store, device_id, device_state=state)
            await asyncio.sleep(self.settings.health_every_s)

    async def maintenance(self) -> None:
        """Run the maintenance queue's worker, starting it again whenever it stops."""
        while True:
            task = asyncio.create_task(self.app.run_worker_async(
                queues=[MAINTENANCE_QUEUE], name=f"maintenance:{self.settings.host}",
                concurrency=1, install_signal_handlers=False,
                update_heartbeat_interval=self.settings.heartbeat_s,
                stalled_worker_timeout=self.settings.stalled_after_s))
            try:
                await asyncio.wait([task])
            except asyncio.CancelledError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
                raise
            self._reap("maintenance", task)
            await asyncio.sleep(self.settings.retry_s)

    async def run(self) -> None:
        """Register, then run workers, heartbeats, health checks and maintenance until cancelled."""
        async with self.app.open_async():
            await self.register_all()
            await self.deliver_leftovers()
            background = [
                asyncio.create_task(self.heartbeats()),
                asyncio.create_task(self.health_checks()),
                asyncio.create_task(self.maintenance()),
                *(asyncio.create_task(self.supervise(d)) for d in self.devices),
            ]
            try:
                await asyncio.gather(*background)
            finally:
                for task in background:
                    task.cancel()
                for device_id in list(self.workers):
                    await self._stop_worker(device_id)
                for device_id in self.devices:
                    with contextlib.suppress(Exception):
                        await asyncio.to_thread(set_state, self.store, device_id, "offline",
                                                reason="worker stopped")
                self.store.close()


def _tail(text: str, limit: int = 400) -> str:
    return text.strip()[-limit:]


def run_agent(url: str, devices: Sequence[DeviceEntry],
              settings: WorkerSettings | None = None) -> None:
    """Run a host's agent until SIGINT, SIGTERM or SIGHUP; its devices then show as offline.

    A running job gets ``settings.grace_s`` to finish, then is handed back to its queue.
    """
    agent = _Agent(url, devices, settings or WorkerSettings())

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await agent.run()

    asyncio.run(main())
