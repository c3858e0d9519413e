"""The A/B reports the lab keeps: ``compare`` and ``track`` jobs run on lab devices.

Each such job stores its report (the Markdown of ``benchlab compare``, the series table of
``benchlab track``, and the exit code) with the job; the trends and compare pages list them and
link each to its job page.
"""

from __future__ import annotations

from sqlalchemy import select

from benchlab.lab.jobs import LabJob, get_job
from benchlab.store import ResultStore
from benchlab.lab.tables import lab_jobs

__all__ = ["ab_reports"]


def ab_reports(store: ResultStore, *, model: str | None = None,
               limit: int = 50) -> list[LabJob]:
    """Finished compare/track jobs with a report, newest first; with ``model``, only those whose
    report names it (a compare of another model says nothing about this one's trend)."""
    query = (select(lab_jobs.c.id, lab_jobs.c.report_json)
             .where(lab_jobs.c.report_json.is_not(None), lab_jobs.c.status == "finished")
             .order_by(lab_jobs.c.id.desc()))
    with store.connection("list the lab's A/B reports") as conn:
        rows = conn.execute(query).all()
    chosen = [row.id for row in rows if not model or model in row.report_json][:limit]
    return [get_job(store, job_id) for job_id in chosen]
