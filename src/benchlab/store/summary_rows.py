"""Reading results by their stored summaries, never their samples: what dashboards need.

The lab's pages (overview, trends, run lists) ask these questions of stores holding millions of
samples; each is one query over the ``results`` rows, aggregated in SQL where that is easy. They
live here, with the tables, so that no other package writes SQL against the store's tables.
Rows come back as :class:`SummaryRow`: the result's columns with its identity, summaries and
details still as the JSON text they are stored as (callers parse what they use).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, func, or_, select

from benchlab.schema.result import Status, device_label
from benchlab.store.store import ResultStore
from benchlab.store.tables import results

__all__ = [
    "Choices",
    "SummaryRow",
    "newest_result_times",
    "newest_rows",
    "ok_rows",
    "result_choices",
]

_COLUMNS = (results.c.id, results.c.run_id, results.c.job_key, results.c.model_name,
            results.c.test_identifier, results.c.framework, results.c.target, results.c.device,
            results.c.status, results.c.error, results.c.started_at, results.c.identity_json,
            results.c.summaries_json, results.c.details_json)


@dataclass(frozen=True)
class SummaryRow:
    """One stored result without its samples; ``rank`` is its place among its job's results,
    newest first (1), where the query ranks them."""

    id: int
    run_id: int
    job_key: str
    model_name: str
    test_identifier: str
    framework: str
    target: str
    device: str
    status: str
    error: str | None
    started_at: str
    identity_json: str
    summaries_json: str
    details_json: str
    rank: int = 0


@dataclass(frozen=True)
class Choices:
    """The models, frameworks and device labels that results exist for (sorted)."""

    models: list[str]
    frameworks: list[str]
    devices: list[str]


def _device_clause(label: str) -> ColumnElement[bool]:
    """A device label (``target:device``, or a bare target) as a condition."""
    target, _, device = label.partition(":")
    return and_(results.c.target == target, results.c.device == device)


def _conditions(model: str | None, framework: str | None, device: str | None,
                ok_only: bool = False) -> list[ColumnElement[bool]]:
    conditions = []
    if ok_only:
        conditions.append(results.c.status == Status.OK.value)
    if model:
        conditions.append(results.c.model_name == model)
    if framework:
        conditions.append(results.c.framework == framework)
    if device:
        conditions.append(_device_clause(device))
    return conditions


def result_choices(store: ResultStore, *, ok_only: bool = False, model: str | None = None,
                   framework: str | None = None) -> Choices:
    """What results exist for (only ok ones with ``ok_only``), narrowed by model and framework:
    the models (whatever ``model`` says), the frameworks of the model, and the devices of the
    model on the framework."""
    ok = _conditions(None, None, None, ok_only)
    with store.connection("list what results exist for") as conn:
        models = sorted(conn.execute(select(results.c.model_name).where(*ok).distinct())
                        .scalars())
        frameworks = sorted(conn.execute(
            select(results.c.framework).where(*_conditions(model, None, None, ok_only))
            .distinct()).scalars())
        pairs = conn.execute(
            select(results.c.target, results.c.device)
            .where(*_conditions(model, framework, None, ok_only)).distinct()).all()
    return Choices(models, frameworks, sorted(device_label(t, d) for t, d in pairs))


def newest_rows(store: ResultStore, *, model: str | None = None, framework: str | None = None,
                device: str | None = None, ok_history: int = 2) -> list[SummaryRow]:
    """Each job's newest result (rank 1) and its ``ok_history`` newest ok ones, by job then
    newest first; one windowed query, so the work does not grow with the store's history."""
    order = (results.c.started_at.desc(), results.c.id.desc())
    ranked = select(
        results.c.id,
        func.row_number().over(partition_by=results.c.job_key, order_by=order).label("rn"),
        func.row_number().over(partition_by=(results.c.job_key, results.c.status),
                               order_by=order).label("ok_rn"),
    ).where(*_conditions(model, framework, device)).subquery()
    query = (
        select(*_COLUMNS, ranked.c.rn)
        .join(ranked, ranked.c.id == results.c.id)
        .where(or_(ranked.c.rn == 1,
                   and_(results.c.status == Status.OK.value, ranked.c.ok_rn <= ok_history)))
        .order_by(results.c.job_key, results.c.started_at.desc(), results.c.id.desc())
    )
    with store.connection("read each job's newest results") as conn:
        return [SummaryRow(*row[:-1], rank=int(row.rn)) for row in conn.execute(query).all()]


def ok_rows(store: ResultStore, *, model: str, framework: str, device: str | None = None,
            limit: int) -> list[SummaryRow]:
    """The newest ``limit`` ok results of a model on a framework (and device), newest first."""
    query = (select(*_COLUMNS)
             .where(*_conditions(model, framework, device, ok_only=True))
             .order_by(results.c.started_at.desc(), results.c.id.desc())
             .limit(limit))
    with store.connection("read a model's ok results") as conn:
        return [SummaryRow(*row) for row in conn.execute(query).all()]


def newest_result_times(store: ResultStore, run_ids: Sequence[int]) -> dict[int, str]:
    """The end time of each run's newest result (runs without one are left out)."""
    if not run_ids:
        return {}
    query = (select(results.c.run_id, func.max(results.c.finished_at))
             .where(results.c.run_id.in_(list(run_ids))).group_by(results.c.run_id))
    with store.connection("read when runs last had a result") as conn:
        return {int(run_id): last for run_id, last in conn.execute(query).all()}
