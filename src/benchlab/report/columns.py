"""One table builder for the tables that list a row per job (the HTML report's main table, the
generation and scenario sections): the columns are declared once and drawn in the HTML report
and, for the generation and scenario tables, in the terminal (rich) too.

A :class:`Column` turns a row into its cell's text; :meth:`Column.metric` takes a metric's
label and number format from the registry (:mod:`benchlab.schema.metrics`), so a unit or a format is
decided in one place for every table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from benchlab.schema.metrics import METRICS
from benchlab.report.svg import esc
from benchlab.schema.result import Metric

__all__ = ["Column", "JobRow", "html_section", "html_table", "job_columns", "rich_table"]

Row = TypeVar("Row")


@dataclass(frozen=True, slots=True)
class Column(Generic[Row]):
    """One column: its heading, its cell's text, whether it holds a number (right-aligned),
    whether its text may wrap (a sentence; names and numbers never do) and, for HTML, a class
    for a cell that should stand out (``fail``, ``failed``) and the text shown on hovering over
    it."""

    label: str
    text: Callable[[Row], str]
    number: bool = True
    css: Callable[[Row], str] | None = None
    wrap: bool = False
    title: Callable[[Row], str] | None = None

    @classmethod
    def metric(cls, metric: Metric, value: Callable[[Row], float | None],
               label: str | None = None) -> Column[Row]:
        """A metric's column, headed and formatted as the registry says."""
        info = METRICS[metric]
        return cls(label or info.label, lambda row: info.text(value(row)))

    @classmethod
    def words(cls, label: str, text: Callable[[Row], str]) -> Column[Row]:
        """A column of words (left-aligned)."""
        return cls(label, text, number=False)


class JobRow(Protocol):
    """A row that names its job the way every table does."""

    @property
    def model(self) -> str: ...
    @property
    def test(self) -> str: ...
    @property
    def framework(self) -> str: ...


JobRowT = TypeVar("JobRowT", bound=JobRow)


def job_columns() -> tuple[Column[Any], Column[Any]]:
    """The columns that name a row's job (model/test, framework), first in every table."""
    def model_test(row: JobRow) -> str:
        return f"{row.model}/{row.test}"

    def framework(row: JobRow) -> str:
        return row.framework

    return Column.words("model/test", model_test), Column.words("framework", framework)


def rich_table(columns: Sequence[Column[Row]], rows: Sequence[Row], *, title: str,
               caption: str) -> Any:
    """The terminal's table (a rich ``Table``; ``None`` without rows); text is escaped, not
    read as markup."""
    from rich.markup import escape
    from rich.table import Table

    if not rows:
        return None
    table = Table(title=title, header_style="bold", expand=False, caption=caption)
    for column in columns:
        table.add_column(column.label, justify="right" if column.number else "left",
                         no_wrap=not column.wrap)
    for row in rows:
        table.add_row(*(escape(column.text(row)) for column in columns))
    return table


def html_section(anchor: str, title: str, blurb: str, columns: Sequence[Column[JobRowT]],
                 rows: Sequence[JobRowT],
                 plots: Callable[[str, list[JobRowT]], list[str]] | None = None) -> str:
    """A report section: its heading, what it shows in words, its table, then ``plots`` of
    each model's rows (models in the order the rows give them); ``""`` without rows."""
    if not rows:
        return ""
    parts = [f'<h2 id="{esc(anchor)}">{esc(title)}</h2>', f'<p class="sub">{esc(blurb)}</p>',
             '<div class="wide">', *html_table(columns, rows), "</div>"]
    if plots is not None:
        for model in dict.fromkeys(row.model for row in rows):
            parts += plots(model, [row for row in rows if row.model == model])
    return "\n".join(parts)


def html_table(columns: Sequence[Column[Row]], rows: Sequence[Row], *,
               failure: Callable[[Row], str | None] | None = None) -> list[str]:
    """The HTML report's table, as lines. A row for which ``failure`` gives a text is a job
    that measured nothing: its words (the columns before the first number), then that text
    across the number columns."""
    words = next((i for i, column in enumerate(columns) if column.number), len(columns))
    out = ["<table><tr>" + "".join(f"<th>{esc(c.label)}</th>" for c in columns) + "</tr>"]
    for row in rows:
        failed = failure(row) if failure is not None else None
        shown = columns[:words] if failed is not None else columns
        cells = [_html_cell(column, row) for column in shown]
        if failed is not None and words < len(columns):
            cells.append(f'<td colspan="{len(columns) - words}" class="failed">'
                         f"{esc(failed)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return [*out, "</table>"]


def _html_cell(column: Column[Row], row: Row) -> str:
    classes = " ".join(filter(None, (
        "n" if column.number else "" if column.wrap else "nw",
        column.css(row) if column.css else "")))
    attr = f' class="{classes}"' if classes else ""
    if column.title is not None and (title := column.title(row)):
        attr += f' title="{esc(title)}"'
    return f"<td{attr}>{esc(column.text(row))}</td>"
