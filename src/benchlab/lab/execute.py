"""One lab job in its own process: ``python -m benchlab.lab.execute --db URL --job N --target T``.

The device worker starts this per job (killed with the worker: the parent-death signal), so a
wedged runtime or a crash fails one job and never the worker. The job's run is created on the
first attempt and its UUID written to the job row at once; a later attempt (after the worker
died) resumes that run, so results already stored are kept and none is stored twice. The last
line on stdout is the :class:`~benchlab.lab.jobs.JobSummary` the worker reads.

The database may go away while the job runs (a restart, a failover): the job's store waits for
it and spools the results it cannot store on the worker's disk (:mod:`benchlab.lab.spool`),
so the measurements go on and nothing measured is lost.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the job; 0 when every result is ok, 1 when some failed, 2 on a usage error."""
    parser = argparse.ArgumentParser(prog="benchlab.lab.execute")
    parser.add_argument("--db", required=True)
    parser.add_argument("--job", type=int, required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--patience", type=float, default=900.0,
                        help="How long a store call waits for an unavailable database (s).")
    args = parser.parse_args(argv)

    from benchlab.lab.queue import store_url
    from benchlab.lab.spool import SpoolingStore, job_spool_dir

    db = store_url(args.db)
    with SpoolingStore.open(db, job_spool_dir(args.db, args.job),
                            patience_s=args.patience) as store:
        return _job(store, args.job, args.target, db)


def _job(store: Any, job_id: int, target: str, db: str) -> int:
    """Run job ``job_id`` with its results in ``store`` (the lab's, spooling)."""
    from benchlab.api import run
    from benchlab.errors import UserError
    from benchlab.lab.jobs import JobSummary, get_job, set_job
    from benchlab.store import RunStatus

    job = store.patiently(get_job, store, job_id)
    request = job.request
    if request.kind == "run" and job.run_uuid:
        done = store.get_run(job.run_uuid)
        if done.status is RunStatus.FINISHED:
            # An earlier attempt finished the run and its worker died before recording that
            # (killed, or cut off from the database): the job is done. Measuring again here,
            # possibly on a device of another kind, would store its results twice.
            print(JobSummary(run_uuid=done.uuid, results=done.result_count,
                             failed=done.failed_count).line())
            return 0 if not done.failed_count else 1

    def remember_run(run_uuid: str) -> None:
        if run_uuid != job.run_uuid:
            store.patiently(set_job, store, job.id, run_uuid=run_uuid)

    # The same folder on every attempt: a spec's path is part of the sweep's fingerprint, and
    # a re-queued attempt must resume the run its first attempt started.
    lab_digest = hashlib.sha256(db.encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"benchlab-lab-{lab_digest}-job-{job.id}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    try:
        try:
            sweep = request.sweep_on(folder, target)
        except UserError as exc:
            print(JobSummary(error=str(exc), user_error=True).line())
            return 2
        if request.kind in ("compare", "track"):
            return _ab(request, sweep, store)
        try:
            try:
                results = run(sweep, db=store, on_run=remember_run,
                              resume=job.run_uuid or False)
            except UserError:
                if not job.run_uuid:
                    raise
                # The earlier attempt's run is of another sweep (a pool job that moved to
                # a device of another kind): this attempt starts its own run.
                results = run(sweep, db=store, on_run=remember_run)
        except UserError as exc:
            print(JobSummary(error=str(exc), user_error=True).line())
            return 2
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(JobSummary(run_uuid=results.run_uuid, results=len(results),
                     failed=len(results.failed), spooled=store.spooled).line())
    return 0 if not results.failed else 1


def _ab(request: Any, sweep: Any, db: Any) -> int:
    """A compare or track job: both sides (every commit) on this one device; the report is
    printed as the summary line for the worker to keep with the job."""
    import io

    from rich.console import Console

    from benchlab.api import compare, track
    from benchlab.errors import UserError
    from benchlab.lab.ab_options import read_compare_options, read_track_options
    from benchlab.lab.jobs import JobSummary
    from benchlab.report.ab import comparison_json, comparison_markdown
    from benchlab.report.history import track_table

    try:
        if request.kind == "compare":
            control, treatment, settings = read_compare_options(request.options)
            comparison = compare(sweep, control=control, treatment=treatment,
                                 settings=settings, db=db)
            report = {"text": comparison_markdown(comparison),
                      "json": json.loads(comparison_json(comparison)),
                      "exit_code": comparison.exit_code}
        else:
            settings = read_track_options(
                request.options, Path(tempfile.gettempdir()) / "benchlab-lab-builds")
            outcome = track(sweep, settings=settings, db=db)
            buffer = io.StringIO()
            Console(file=buffer, width=120, color_system=None).print(track_table(outcome))
            text = "\n".join([buffer.getvalue(), *outcome.notes])
            report = {"text": text, "json": None, "exit_code": 1 if outcome.culprits else 0}
    except UserError as exc:
        print(JobSummary(error=str(exc), user_error=True).line())
        return 2
    print(JobSummary(report=report).line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
