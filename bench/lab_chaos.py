"""The lab under faults: hundreds of real jobs while workers, the database, the server and a
phone fail, and whether every job still ends once with its result.

The lab: PostgreSQL 15 and ``benchlab lab serve`` on loopback, three ``benchlab lab worker``
processes serving four devices in one pool (``lane=chaos``): worker c1 serves ``host:c1`` and
an ssh board on loopback (a real sshd), worker c2 serves the stand-in phone (a real ``adb``
server speaking to the stand-in's adbd), worker c3 serves ``host:c3``. Each job runs a real
spec in its own process on its device: ``nap.py`` sleeps 0.3 s, prints three metric lines and
marks its completion in the job's own marks file.

The faults, on a schedule while jobs remain (full run):

* a worker killed with SIGKILL every 60 s, round robin, started again 3 s later (a service
  manager's ``Restart=always``);
* PostgreSQL halted for 5 s, twice (``pg_ctl stop -m fast``, then started on the same port);
* the lab server restarted once (SIGTERM, then a new ``lab serve``);
* the stand-in phone disconnected from its adb server for 20 s, once.

Figures: jobs lost (not ended when the run stops), jobs failed (each with its reason), ok
results stored per job (goal: exactly one each), completed executions per job (a job whose
worker was killed mid-run is measured again: its first process died with its worker), and
the recovery after each fault: from the fault's end to the next job starting on what it hit
(any device after a database restart, the worker's devices after a kill, the phone after its
reconnection; the server: until ``/api/v1/health`` answers). Goal: under 30 s each.

The workers run with the test settings of ``tests/lab/agents.py``: heartbeat 1 s, a job
re-queued after 4 s without its worker's heartbeat (the lab's defaults: 5 s and 30 s).

Run: ``.venv/bin/python bench/lab_chaos.py`` (about 10 minutes); ``--smoke`` for CI: 12 jobs
and each kind of fault once, one after the other from the start (``SMOKE``).
"""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _common import parse_args, write_result
from lab.agents import Agents, nap_spec, read_marks, wait_until

from benchlab.lab.client import submit_to_lab
from benchlab.lab.jobs import LabJob, list_jobs
from benchlab.lab.localpg import PostgresServer, PostgresUnavailable, find_pg_bin
from benchlab.lab.queue import init_lab, open_lab, store_url
from benchlab.store import open_store

FULL = {"jobs": 500, "kill_every_s": 60.0, "pg_restarts_at": (90.0, 210.0),
        "server_restart_at": 150.0, "phone_off_at": 120.0, "phone_off_s": 20.0,
        "pg_down_s": 5.0, "timeout_s": 1800.0}
#: The smoke: every kind of fault once, one after the other from the start, while 12 jobs
#: run (the slow server restart last).
#: Its timeout ends the chaos well inside the test's limit (tests/bounded.py), so a job that
#: never ends is reported as lost, with its row, instead of the test being killed unexplained:
#: the smoke's jobs all end in under a minute on a 2-core VM.
SMOKE = {"jobs": 12, "first_kill_s": 4.0, "kill_every_s": 60.0, "pg_restarts_at": (7.0,),
         "server_restart_at": 9.0, "phone_off_at": 1.0, "phone_off_s": 3.0,
         "pg_down_s": 2.0, "timeout_s": 240.0}
POOL = "lane=chaos"


@dataclass
class Fault:
    """One fault: what, when it ended (epoch s), and which devices it hit ('*': all)."""

    kind: str
    ended_at: float
    devices: tuple[str, ...]
    detail: str = ""


@dataclass
class Lab:
    """The running pieces the faults act on."""

    pg: PostgresServer
    url: str
    port: int
    agents: Agents
    workers: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    """name -> (its extra agent arguments, the device ids it serves)."""
    phone: Any
    adb: Any
    server: subprocess.Popen | None = None
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start_server(self) -> None:
        self.server = subprocess.Popen(
            [sys.executable, "-m", "benchlab", "lab", "serve", "--db", self.url, "--port",
             str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self.healthy, 60, "the lab server")

    def healthy(self) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/api/v1/health",
                             timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def start_worker(self, name: str) -> None:
        extra, _ = self.workers[name]
        host_device = not any(arg == "--no-host-device" for arg in extra)
        args = tuple(arg for arg in extra if arg != "--no-host-device")
        self.procs[name] = self.agents.start(name, *args, host_device=host_device)


def _jobs(url: str, ids: list[int]) -> list[LabJob]:
    wanted = set(ids)
    with open_lab(url) as lab:
        return [j for j in list_jobs(lab.store, limit=len(ids) * 3) if j.id in wanted]


def _ended(url: str, ids: list[int]) -> int:
    return sum(j.status in ("finished", "failed", "cancelled") for j in _jobs(url, ids))


def run_chaos(lab: Lab, shape: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Submit the jobs, play the faults while they run, then account for every job.

    A tenth of the jobs (at least one) is held back until every kind of fault has been
    played once: on a machine fast enough to finish the others before the schedule reaches
    a kind, that kind is played at once, and the jobs still to come must get through the
    lab it leaves behind.
    """
    specs = [nap_spec(folder, 0.3, folder / f"marks-{n}.jsonl", name=f"chaos{n}")
             for n in range(shape["jobs"])]
    reserve = max(1, len(specs) // 10)
    started = time.time()
    ids = [submit_to_lab(lab.url, [spec], pool=POOL, fan_out=False)[0].id
           for spec in specs[:-reserve]]
    submitted_s = time.time() - started
    faults: list[Fault] = []
    plan = _schedule(shape, list(lab.workers))
    kinds = {kind for _, kind, _ in plan}
    t0 = time.monotonic()
    while time.monotonic() - t0 < shape["timeout_s"]:
        ended = _ended(lab.url, ids)
        if ended == len(ids) == len(specs):
            break
        now = time.monotonic() - t0
        due = []
        while plan and plan[0][0] <= now:
            due.append(plan.pop(0))
        if ended == len(ids):
            # The jobs ran out before the schedule played every kind: each one left, now.
            played = {f.kind for f in faults} | {kind for _, kind, _ in due}
            for kind in sorted(kinds - played):
                due.append(next(step for step in plan if step[1] == kind))
                plan.remove(due[-1])
        for _, kind, target in due:
            faults.append(_inject(lab, kind, target, shape))
            print(f"{time.monotonic() - t0:6.1f} s  {faults[-1].kind} {faults[-1].detail}",
                  flush=True)
        if len(ids) < len(specs) and kinds <= {f.kind for f in faults}:
            ids += [submit_to_lab(lab.url, [spec], pool=POOL, fan_out=False)[0].id
                    for spec in specs[len(ids):]]
        time.sleep(0.5)
    wall_s = time.monotonic() - t0
    return _account(lab, ids, faults, folder, shape, wall_s, submitted_s)


def _schedule(shape: dict[str, Any], workers: list[str]) -> list[tuple[float, str, str]]:
    plan = [(at, "pg_restart", "") for at in shape["pg_restarts_at"]]
    plan.append((shape["server_restart_at"], "server_restart", ""))
    plan.append((shape["phone_off_at"], "phone_disconnect", ""))
    at, n = shape.get("first_kill_s", shape["kill_every_s"]), 0
    while at < shape["timeout_s"]:
        plan.append((at, "worker_kill", workers[n % len(workers)]))
        at, n = at + shape["kill_every_s"], n + 1
    return sorted(plan)


def _inject(lab: Lab, kind: str, target: str, shape: dict[str, Any]) -> Fault:
    if kind == "pg_restart":
        lab.pg.halt()
        time.sleep(shape["pg_down_s"])
        lab.pg.resume()
        return Fault(kind, time.time(), ("*",), f"down {shape['pg_down_s']:.0f} s")
    if kind == "server_restart":
        assert lab.server is not None
        lab.server.send_signal(signal.SIGTERM)
        lab.server.wait(timeout=60)
        down = time.time()
        lab.start_server()
        return Fault(kind, down, (), f"back in {time.time() - down:.1f} s")
    if kind == "phone_disconnect":
        lab.adb.disconnect(lab.phone.serial)
        time.sleep(shape["phone_off_s"])
        lab.adb.connect(lab.phone.serial)
        return Fault(kind, time.time(), (f"adb:{lab.phone.serial}",),
                     f"off {shape['phone_off_s']:.0f} s")
    proc = lab.procs[target]
    proc.kill()
    proc.wait()
    time.sleep(3.0)
    lab.start_worker(target)
    return Fault(kind, time.time(), lab.workers[target][1], target)


def _account(lab: Lab, ids: list[int], faults: list[Fault], folder: Path,
             shape: dict[str, Any], wall_s: float, submitted_s: float) -> dict[str, Any]:
    jobs = _jobs(lab.url, ids)
    by_status = Counter(j.status for j in jobs)
    ok_per_model: Counter[str] = Counter()
    where: dict[str, list[str]] = {}
    with open_store(store_url(lab.url)) as store:
        for run in store.list_runs(limit=len(ids) * 3):
            for result in store.results(run.id):
                if result.ok:
                    ok_per_model[result.identity.model_name] += 1
                    where.setdefault(result.identity.model_name, []).append(
                        f"run {run.uuid[:8]} on {result.identity.device}")
    executions = [len(read_marks(folder / f"marks-{n}.jsonl")) for n in range(len(ids))]
    finished = [j for j in jobs if j.status == "finished"]
    number = {job_id: n for n, job_id in enumerate(ids)}  # job id -> its spec's number
    recoveries = [_recovery(lab, f, jobs) for f in faults]
    measured = [r["recovery_s"] for r in recoveries if r["recovery_s"] is not None]
    return {
        "jobs": len(ids), "devices": sorted({d for _, ds in lab.workers.values() for d in ds}),
        "wall_s": round(wall_s, 1), "submitted_per_s": round(len(ids) / submitted_s, 1),
        "statuses": dict(by_status),
        "lost": len(ids) - sum(by_status[s] for s in ("finished", "failed", "cancelled")),
        "failed_reasons": sorted({j.reason for j in jobs if j.status == "failed"}),
        "ended_without_reason": sum(1 for j in jobs if j.status != "waiting" and not j.reason),
        "ok_results_per_job": dict(Counter(ok_per_model[f"chaos{n}"]
                                           for n in range(len(ids)))),
        "results_twice": sum(1 for n in range(len(ids)) if ok_per_model[f"chaos{n}"] > 1),
        "executions_per_job": dict(Counter(executions)),
        "attempts_per_finished_job": dict(Counter(j.attempts for j in finished)),
        "jobs_per_device": dict(Counter(j.device_id for j in finished)),
        "anomalies": [
            {"job": j.id, "status": j.status, "attempts": j.attempts, "device": j.device_id,
             "reason": j.reason[-300:], "ok_results": where.get(f"chaos{number[j.id]}", []),
             "executions": executions[number[j.id]]}
            for j in jobs
            if j.status != "finished" or ok_per_model[f"chaos{number[j.id]}"] != 1],
        "faults": recoveries,
        "recovery_max_s": max(measured) if measured else None,
        "recovery_median_s": statistics.median(measured) if measured else None,
    }


def _recovery(lab: Lab, fault: Fault, jobs: list[LabJob]) -> dict[str, Any]:
    """Seconds from the fault's end to the next job start on what it hit."""
    row: dict[str, Any] = {"kind": fault.kind, "detail": fault.detail}
    if fault.kind == "server_restart":
        row["recovery_s"] = float(fault.detail.split()[2])
        return row
    starts = [j.started_at for j in jobs if j.started_at and j.started_at >= fault.ended_at
              and ("*" in fault.devices or j.device_id in fault.devices)]
    row["recovery_s"] = round(min(starts) - fault.ended_at, 2) if starts else None
    if not starts:
        row["note"] = "no job started there afterwards (the queue had emptied)"
    return row


def main() -> None:
    """Build the lab, run the chaos, write bench/results/lab_chaos.json."""
    args = parse_args(__doc__.splitlines()[0], repeats=1, repeats_help="unused: one run")
    shape = SMOKE if args.smoke else FULL
    # SIGTERM (a test's limit, a service manager) unwinds through the clean-up below: the
    # workers, the server and PostgreSQL are stopped instead of left running.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    bin_dir = find_pg_bin()
    if bin_dir is None:
        write_result("lab_chaos", args, {"available": False, "reason": "no PostgreSQL"})
        return
    from benchlab_standin import StandinPhone
    from benchlab_standin.adbserver import free_port, isolated_adb_server
    from benchlab_standin.board import LoopbackBoard

    try:
        pg = PostgresServer(bin_dir)
    except PostgresUnavailable as exc:
        write_result("lab_chaos", args, {"available": False, "reason": str(exc)})
        return
    pg.start()
    folder = Path(tempfile.mkdtemp(prefix="benchlab-chaos-"))
    (folder / "logs").mkdir()
    try:
        url = pg.create_database().replace("+psycopg2", "")
        init_lab(url)
        with LoopbackBoard(folder / "board") as board, \
                StandinPhone(folder / "phone") as phone, isolated_adb_server() as adb:
            adb.connect(phone.serial)
            phone_target = (f"adb:serial={phone.serial},server_port={adb.port},"
                            f"python={sys.executable}")
            workers = {
                "c1": (("--board", board.target_text, "--label", POOL),
                       ("host:c1", f"ssh:{board.alias}")),
                "c2": (("--board", phone_target, "--label", POOL, "--no-host-device"),
                       (f"adb:{phone.serial}",)),
                "c3": (("--label", POOL), ("host:c3",)),
            }
            agents = Agents(url, folder / "logs", die_with_parent=True)
            lab = Lab(pg, url, free_port(), agents, workers, phone, adb)
            try:
                lab.start_server()
                for name in workers:
                    lab.start_worker(name)
                for _, devices in workers.values():
                    for device in devices:
                        lab.agents.wait_registered(device, timeout=120)
                figures = {"available": True, "shape": {k: v for k, v in shape.items()},
                           **run_chaos(lab, shape, folder)}
            finally:
                lab.agents.stop()
                if lab.server is not None and lab.server.poll() is None:
                    lab.server.terminate()
                    lab.server.wait(timeout=60)
    finally:
        pg.stop()
    for key in ("statuses", "lost", "results_twice", "ok_results_per_job",
                "executions_per_job", "recovery_max_s"):
        print(f"{key}: {figures[key]}")
    print(write_result("lab_chaos", args, figures))


if __name__ == "__main__":
    main()
