"""``benchlab lab ...``: set up a lab, run its server and workers, submit and watch jobs.

Each command maps to one call in :mod:`benchlab.lab`. The lab's database URL comes from
``--db`` or the ``BENCHLAB_LAB_DB`` environment variable.
"""

from __future__ import annotations

import json
import os
import time
import tomllib
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from benchlab.errors import UsageError
from benchlab.cli.options import split_models
from benchlab.cli.output import console, err_console

__all__ = ["lab_app"]

lab_app = typer.Typer(help="The lab: many hosts and devices, one PostgreSQL, a dashboard.",
                      no_args_is_help=True)
token_app = typer.Typer(help="API tokens: create, list, revoke.", no_args_is_help=True)
lab_app.add_typer(token_app, name="token")

LabDb = Annotated[
    Optional[str],  # noqa: UP007 - typer needs Optional here
    typer.Option("--db", help="The lab's PostgreSQL URL (default: $BENCHLAB_LAB_DB)."),
]


def _url(db: str | None) -> str:
    url = db or os.environ.get("BENCHLAB_LAB_DB")
    if not url:
        raise UsageError("give the lab's database: --db postgresql://user@host:port/db "
                         "(or set BENCHLAB_LAB_DB)")
    return url


@lab_app.command("init")
def lab_init(db: LabDb = None) -> None:
    """Create the lab's tables and the queue's schema in a PostgreSQL database (idempotent)."""
    from benchlab.lab.queue import init_lab

    console.print(init_lab(_url(db)))


@lab_app.command("serve")
def lab_serve(
    db: LabDb = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8470,
    anonymous_read: Annotated[bool, typer.Option(help="Let visitors without a token read pages and the API.")] = True,  # noqa: E501
) -> None:
    """Serve the dashboard and the JSON API (/api/v1, OpenAPI at /openapi.json)."""
    from benchlab.lab.server.app import serve

    err_console.print(f"lab server on http://{host}:{port}/")
    serve(_url(db), host=host, port=port, anonymous_read=anonymous_read)


def _boards(config: Path | None, boards: list[str]) -> list[str]:
    found = list(boards)
    if config is not None:
        try:
            data = tomllib.loads(config.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"{config}: cannot read the worker config: {exc}") from None
        listed = data.get("worker", {}).get("boards", [])
        if not isinstance(listed, list) or not all(isinstance(b, str) for b in listed):
            raise UsageError(f"{config}: worker.boards must be a list of target strings "
                             "such as 'ssh:host=pi,user=bench'")
        found += listed
    return found


@lab_app.command("worker")
def lab_worker(
    db: LabDb = None,
    name: Annotated[Optional[str], typer.Option(help="This host's name in the lab (default: hostname).")] = None,  # noqa: UP007,E501
    board: Annotated[list[str], typer.Option("--board", help="An ssh board this host serves, e.g. 'ssh:host=pi,user=bench' (repeatable).")] = [],  # noqa: B006,E501
    config: Annotated[Optional[Path], typer.Option(help="TOML file with [worker] boards = [...].")] = None,  # noqa: UP007,E501
    host_device: Annotated[bool, typer.Option("--host-device/--no-host-device", help="Serve this host itself as a device.")] = True,  # noqa: E501
    adb: Annotated[bool, typer.Option("--adb/--no-adb", help="Serve the attached adb phones.")] = True,  # noqa: E501
    heartbeat: Annotated[float, typer.Option(help="Seconds between heartbeats.")] = 5.0,
    stalled_after: Annotated[float, typer.Option(help="Re-queue a job whose worker is silent this long (s).")] = 30.0,  # noqa: E501
    health_every: Annotated[float, typer.Option(help="Seconds between health checks.")] = 300.0,  # noqa: E501
    label: Annotated[list[str], typer.Option("--label", help="An extra property of this host's devices, KEY=VALUE, for pool rules (repeatable).")] = [],  # noqa: B006,E501
    grace: Annotated[float, typer.Option(help="On SIGTERM/SIGINT/SIGHUP, seconds a running job may take to finish before it is handed back to its queue.")] = 60.0,  # noqa: E501
) -> None:
    """Run this host's device agent: register its devices and run their jobs until stopped.

    SIGTERM, SIGINT and SIGHUP stop it cleanly: a running job finishes within --grace or goes
    back to its queue, and the devices show as offline.
    """
    import socket

    from benchlab.lab.probe import enumerate_devices
    from benchlab.lab.worker import WorkerSettings, run_agent

    host = name or socket.gethostname()
    devices = enumerate_devices(host, include_host=host_device, adb=adb,
                                targets=_boards(config, board))
    if not devices:
        raise UsageError("this host has no device to serve (no host device, no phone, no board)")
    for device in devices:
        err_console.print(f"serving {escape(device.id)} ({escape(device.target)})")
    labels = {}
    for item in label:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--label {item!r}: write KEY=VALUE, e.g. lane=nightly")
        labels[key.strip()] = value.strip()
    run_agent(_url(db), devices, WorkerSettings(
        host=host, heartbeat_s=heartbeat, stalled_after_s=stalled_after,
        health_every_s=health_every, labels=labels, grace_s=grace))


@lab_app.command("submit")
def lab_submit(
    specs: Annotated[list[Path], typer.Argument(help="Spec files to run on the lab.")] = [],  # noqa: B006
    db: LabDb = None,
    device: Annotated[Optional[str], typer.Option(help="Run on this device (its lab id).")] = None,  # noqa: UP007,E501
    pool: Annotated[Optional[str], typer.Option(help="Run on every device matching this rule, e.g. 'abi=arm64-v8a'.")] = None,  # noqa: UP007,E501
    any_device: Annotated[bool, typer.Option("--any", help="With --pool: one job, taken by the first free matching device.")] = False,  # noqa: E501
    models: Annotated[Optional[str], typer.Option(help="Zoo models, comma-separated.")] = None,  # noqa: UP007,E501
    frameworks: Annotated[list[str], typer.Option("--frameworks", "-f", help="Frameworks, e.g. 'onnxruntime'.")] = [],  # noqa: B006,E501
    wait: Annotated[bool, typer.Option("--wait", help="Wait until every job has ended.")] = False,  # noqa: E501
    timeout: Annotated[float, typer.Option(help="With --wait: give up after this many seconds.")] = 3600.0,  # noqa: E501
) -> None:
    """Queue a spec for lab devices; prints the job ids (and, with --wait, their outcomes).

    With --wait it exits as ``benchlab run`` does: 1 when any job or result failed.
    """
    from benchlab.lab.client import job_outcomes, submit_to_lab as submit

    url = _url(db)
    jobs = submit(url, specs, device=device, pool=pool, fan_out=not any_device,
                  models=split_models(models),
                  frameworks=frameworks, wait=wait, timeout=timeout)
    _jobs_table(jobs)
    if wait and not _print_failures(job_outcomes(url, jobs)):
        raise typer.Exit(1)


def _print_failures(outcomes: list) -> bool:  # noqa: ANN001
    """Print each failed job's lines; True when every job succeeded."""
    for outcome in outcomes:
        for line in outcome.lines():
            err_console.print(f"[red]{escape(line)}[/]", highlight=False, soft_wrap=True)
    return all(outcome.ok for outcome in outcomes)


def _jobs_table(jobs: list) -> None:  # noqa: ANN001
    table = Table(title="lab jobs", header_style="bold")
    for column in ("job", "route", "device", "status", "reason", "run"):
        table.add_column(column)
    for job in jobs:
        table.add_row(str(job.id), escape(f"{job.route_kind}:{job.route}"),
                      escape(job.device_id or ""), job.status, escape(job.reason),
                      (job.run_uuid or "")[:8])
    console.print(table)


@lab_app.command("status")
def lab_status(
    db: LabDb = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,  # noqa: E501
) -> None:
    """Devices (state × health, heartbeat age, current job) and queues, stuck ones flagged."""
    from benchlab.lab.devices import device_counts, list_devices
    from benchlab.lab.jobs import queue_summary
    from benchlab.lab.queue import open_lab

    with open_lab(_url(db)) as lab:
        devices = list_devices(lab.store)
        queues = queue_summary(lab.store)
    if as_json:
        console.print_json(json.dumps({
            "counts": device_counts(devices), "devices": [d.to_json() for d in devices],
            "queues": [q.to_json() for q in queues]}))
        return
    counts = device_counts(devices)
    console.print("  ".join(f"{tab} {n}" for tab, n in counts.items()))
    table = Table(title="devices", header_style="bold")
    for column in ("device", "host", "state", "health", "heartbeat", "job", "note"):
        table.add_column(column)
    for d in devices:
        note = (f"quarantined by {d.quarantined_by}: {d.quarantine_reason}" if d.quarantined
                else d.health_reason)
        table.add_row(escape(d.id), escape(d.host), d.effective_state, d.health,
                      f"{d.heartbeat_age_s:.0f} s ago", str(d.current_job or ""), escape(note))
    console.print(table)
    qtable = Table(title="queues", header_style="bold")
    for column in ("queue", "waiting", "running", "finished", "failed", "oldest waiting", "why"):
        qtable.add_column(column)
    for q in queues:
        row = q.to_json()
        age = row["oldest_waiting_s"]
        shown = "" if age is None else f"{age:.0f} s" + (" [red]STUCK[/]" if row["stuck"] else "")
        qtable.add_row(escape(q.queue), *(str(q.counts[s]) for s in
                       ("waiting", "running", "finished", "failed")), shown, escape(q.problem))
    console.print(qtable)


@lab_app.command("quarantine")
def lab_quarantine(device: str, reason: Annotated[str, typer.Option(help="Why.")],
                   db: LabDb = None,
                   who: Annotated[Optional[str], typer.Option(help="Who (default: $USER).")] = None,  # noqa: UP007,E501
                   ) -> None:
    """Take a device out of rotation, with who and why."""
    from benchlab.lab.devices import quarantine
    from benchlab.lab.queue import open_lab

    with open_lab(_url(db)) as lab:
        quarantine(lab.store, device, who=who or os.environ.get("USER", "cli"), reason=reason)
    console.print(f"{escape(device)} quarantined")


@lab_app.command("release")
def lab_release(device: str, db: LabDb = None) -> None:
    """Put a quarantined device back in rotation."""
    from benchlab.lab.devices import release
    from benchlab.lab.queue import open_lab

    with open_lab(_url(db)) as lab:
        release(lab.store, device, who=os.environ.get("USER", "cli"))
    console.print(f"{escape(device)} released")


@lab_app.command("cancel")
def lab_cancel(job: int, db: LabDb = None) -> None:
    """Cancel a waiting job."""
    from benchlab.lab.queue import cancel_job, open_lab

    with open_lab(_url(db)) as lab:
        done = cancel_job(lab, job, who=os.environ.get("USER", "cli"))
    if not done:
        raise UsageError(f"job {job} is not waiting; only waiting jobs can be cancelled")
    console.print(f"job {job} cancelled")


@lab_app.command("pool")
def lab_pool(rule: str, db: LabDb = None) -> None:
    """Make a pool known (workers whose devices match it listen on its queue)."""
    from benchlab.lab.devices import add_pool
    from benchlab.lab.queue import open_lab

    with open_lab(_url(db)) as lab:
        console.print(f"pool {escape(add_pool(lab.store, rule).name)}")


@token_app.command("create")
def token_create(name: str, scopes: Annotated[str, typer.Option(help="worker,submit,report,admin,read")],  # noqa: E501
                 db: LabDb = None,
                 host: Annotated[str, typer.Option(help="For worker tokens: the host they serve.")] = "",  # noqa: E501
                 ) -> None:
    """Create a token; it is printed once and stored only as a hash."""
    from benchlab.lab.queue import open_lab
    from benchlab.lab.tokens import create_token

    with open_lab(_url(db)) as lab:
        token, info = create_token(lab.store, name, scopes, host=host)
    err_console.print(f"token {info.id} ({', '.join(sorted(info.scopes))}); it is shown only now:")
    print(token)


@token_app.command("list")
def token_list(db: LabDb = None) -> None:
    """Every token's id, name, scopes and state (never the token)."""
    from benchlab.lab.queue import open_lab
    from benchlab.lab.tokens import list_tokens

    with open_lab(_url(db)) as lab:
        tokens = list_tokens(lab.store)
    table = Table(title="lab tokens", header_style="bold")
    for column in ("id", "name", "scopes", "host", "created", "state"):
        table.add_column(column)
    for t in tokens:
        table.add_row(str(t.id), escape(t.name), ",".join(sorted(t.scopes)), escape(t.host),
                      time.strftime("%Y-%m-%d %H:%M", time.gmtime(t.created_at)),
                      "revoked" if t.revoked else "live")
    console.print(table)


@token_app.command("revoke")
def token_revoke(token_id: int, db: LabDb = None) -> None:
    """Revoke a token by id."""
    from benchlab.lab.queue import open_lab
    from benchlab.lab.tokens import revoke_token

    with open_lab(_url(db)) as lab:
        if not revoke_token(lab.store, token_id):
            raise UsageError(f"no live token {token_id}")
    console.print(f"token {token_id} revoked")


@lab_app.command("up")
def lab_up(
    data_dir: Annotated[Optional[Path], typer.Option(help="Where PostgreSQL keeps the lab (default: a folder under the system temp dir).")] = None,  # noqa: UP007,E501
    port: Annotated[int, typer.Option(help="The dashboard's port.")] = 8470,
    pg_port: Annotated[int, typer.Option(help="PostgreSQL's port (0: any free one).")] = 0,
) -> None:
    """A lab on this machine in one command: PostgreSQL, the server and this host's worker."""
    from benchlab.lab.up import start_local_lab

    lab = start_local_lab(data_dir=data_dir, port=port, pg_port=pg_port,
                          log=lambda line: err_console.print(escape(line)))
    console.print(f"lab: {lab.web_url}")
    console.print(f"database: {escape(lab.database_url)}")
    console.print("submit: benchlab lab submit SPEC --db DATABASE --pool kind=host --wait")
    why = lab.wait()
    err_console.print(f"lab stopped: {escape(why)}")
    if why.startswith("a lab process exited"):
        raise typer.Exit(1)


# The lab side of `run --lab`, `compare --lab` and `track --lab` (cli.py calls these).


def run_on_lab(url: str, sweep: Any, device: str | None, pool: str | None, *,
               dry_run: bool = False, detach: bool = False) -> tuple[list[Any], bool]:
    """``run --lab``: the same sweep, queued for lab devices and waited for (``detach``:
    queued only; ``dry_run``: the request printed, nothing queued).

    Returns the results the jobs stored, and whether every job finished with ok results.
    """
    from benchlab.lab.client import job_outcomes, request_for, submit_to_lab

    if dry_run:
        _print_request(request_for(sweep))
        return [], True
    jobs = submit_to_lab(url, sweep, device=device, pool=pool, wait=not detach)
    if detach:
        _jobs_table(jobs)
        return [], True
    outcomes = job_outcomes(url, jobs, with_samples=True)
    for outcome in outcomes:
        job = outcome.job
        err_console.print(f"lab job {job.id} on {escape(outcome.where)}: "
                   f"{job.status} ({escape(job.reason)})")
    ok = _print_failures(outcomes)
    return [r for outcome in outcomes for r in outcome.results], ok


def ab_on_lab(url: str, device: str | None, kind: str, sweep: Any,
              options: dict[str, Any], *, dry_run: bool = False,
              detach: bool = False) -> None:
    """``compare/track --lab``: one job on one device; prints its report and exits with its
    code (``detach``: prints the job and exits 0; ``dry_run``: prints the request)."""
    from benchlab.lab.client import request_for, submit_to_lab

    if dry_run:
        _print_request(request_for(sweep, kind=kind, options=options))
        raise typer.Exit(0)
    if not device:
        raise UsageError(f"{kind} --lab needs --lab-device: both sides must run on one device")
    jobs = submit_to_lab(url, sweep, device=device, kind=kind, options=options,
                         wait=not detach)
    if detach:
        _jobs_table(jobs)
        raise typer.Exit(0)
    [job] = jobs
    err_console.print(f"lab job {job.id} on {escape(job.device_id or job.route)}: "
               f"{job.status} ({escape(job.reason)})")
    if job.report is None:
        raise typer.Exit(3)
    console.print(escape(job.report["text"]), highlight=False)
    raise typer.Exit(int(job.report["exit_code"]))


def _print_request(request: Any) -> None:
    """A lab request as JSON, with the digest its stored job will carry."""
    console.print_json(json.dumps({"kind": request.kind, "digest": request.digest,
                                   "sweep": dict(request.sweep),
                                   "options": dict(request.options)}))
