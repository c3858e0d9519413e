"""One table builder for the tables that list a row per job: the columns are declared once and
drawn in the terminal (rich) and in the HTML report.

A :class:`Column` turns a row into its cell's text; :meth:`Column.metric` takes a metric's
label and number format from the registry (:mod:`benchlab.schema.metrics`), so a unit or a format is
decided in one place for every table.

In the terminal (:func:`rich_table`) a table fits the width it is drawn at without cutting a
number or a header: the key columns (the row's name: model, framework, device) and the columns
of sentences fold onto more lines, never below a few characters; when the numbers still do not
fit, the table is drawn as parts, each with the key columns and as many of the others, in their
order, as fit (:class:`FittedTable`). A column marked ``wide`` is left out of the terminal's
table unless ``--wide`` asks for every column; the HTML report always has it (the
matrix report's table, once some row has a number in it: :func:`filled_columns`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from benchlab.report.svg import esc
from benchlab.schema.metrics import METRICS
from benchlab.schema.result import Metric

__all__ = ["Column", "FittedTable", "JobRow", "filled_columns", "html_section", "html_table",
           "job_columns", "job_name", "legend", "pack_parts", "rich_table", "shown_columns"]

Row = TypeVar("Row")

#: The fewest characters a key column folds to: a model's or a backend's name on two or three
#: lines rather than one letter a line.
KEY_FLOOR = 12
#: The fewest characters a column of sentences (LoadGen's verdict, notes) wraps to.
WRAP_FLOOR = 12


@dataclass(frozen=True, slots=True)
class Column(Generic[Row]):
    """One column: its heading, its cell's text, whether it holds a number (right-aligned),
    whether its text may wrap (a sentence; names and numbers never do) and, for HTML, a class
    for a cell that should stand out (``fail``, ``failed``) and the text shown on hovering over
    it.

    For the terminal: ``key`` columns name the row (model/test, framework, device): they are in
    every part of a table split to fit and fold rather than push the numbers off the
    terminal; ``wide`` columns are shown only with ``--wide``; ``style`` is a cell's rich
    style (a status's colour, the fastest device in bold); ``legend`` is the phrase the table's
    caption says of the column (its unit, what it means), said only when the column is shown.
    """

    label: str
    text: Callable[[Row], str]
    number: bool = True
    css: Callable[[Row], str] | None = None
    wrap: bool = False
    title: Callable[[Row], str] | None = None
    key: bool = False
    wide: bool = False
    style: Callable[[Row], str] | None = None
    legend: str = ""

    @classmethod
    def metric(cls, metric: Metric, value: Callable[[Row], float | None],
               label: str | None = None, *, wide: bool = False,
               legend: str = "") -> Column[Row]:
        """A metric's column, headed and formatted as the registry says."""
        info = METRICS[metric]
        return cls(label or info.label, lambda row: info.text(value(row)), wide=wide,
                   legend=legend)

    @classmethod
    def words(cls, label: str, text: Callable[[Row], str], *, key: bool = False,
              wide: bool = False, style: Callable[[Row], str] | None = None,
              legend: str = "") -> Column[Row]:
        """A column of words (left-aligned)."""
        return cls(label, text, number=False, key=key, wide=wide, style=style, legend=legend)


class JobRow(Protocol):
    """A row that names its job the way every table does."""

    @property
    def model(self) -> str: ...
    @property
    def test(self) -> str: ...
    @property
    def framework(self) -> str: ...


JobRowT = TypeVar("JobRowT", bound=JobRow)


def job_name(model: str, test: str) -> str:
    """``model/test``, or the model alone for its ``default`` test: how every table names a
    job's model."""
    return model if test == "default" else f"{model}/{test}"


def job_columns() -> tuple[Column[Any], Column[Any]]:
    """The columns that name a row's job (model/test, framework), first in every table."""
    def model_test(row: JobRow) -> str:
        return job_name(row.model, row.test)

    def framework(row: JobRow) -> str:
        return row.framework

    return (Column.words("model/test", model_test, key=True),
            Column.words("framework", framework, key=True))


def legend(columns: Iterable[Column[Any]], lead: str = "", tail: str = "") -> str:
    """A caption that says what the shown ``columns`` mean: ``lead``, each column's legend once
    (in column order, ``; `` between), ``tail``."""
    said = "; ".join(dict.fromkeys(c.legend for c in columns if c.legend))
    return " ".join(part for part in (lead, said, tail) if part)


def pack_parts(floors: Sequence[int], keys: Sequence[bool], width: int) -> list[list[int]]:
    """The columns of each part of a table drawn ``width`` characters wide, as indices: every
    part has the key columns, then the others in order, as few parts as fit and those as even
    as they can be (the room left goes to the columns that fold). ``floors`` are the narrowest
    each column may be (its cells' width for a column that cannot fold). One part when
    everything fits; a column too wide for any part has one of its own."""
    # A rich table with the default box and padding: one border left of every column, one at
    # the right end, a space either side of each cell.
    costs = [floor + 3 for floor in floors]
    fixed = 1 + sum(cost for cost, key in zip(costs, keys, strict=True) if key)
    others = [i for i, key in enumerate(keys) if not key]

    def greedy(limit: int) -> list[list[int]]:
        parts: list[list[int]] = [[]]
        used = fixed
        for index in others:
            if parts[-1] and used + costs[index] > limit:
                parts.append([])
                used = fixed
            parts[-1].append(index)
            used += costs[index]
        return parts

    parts = greedy(width)
    if len(parts) > 1:
        # The narrowest limit that still needs no more parts: the parts come out even
        # instead of the last one holding what was left over.
        low, high = fixed, width
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if len(greedy(middle)) <= len(parts) else (middle + 1,
                                                                                high)
        parts = greedy(low)
    key_indices = [i for i, key in enumerate(keys) if key]
    return [sorted(key_indices + part) for part in parts]


@dataclass(frozen=True, slots=True)
class _Drawn:
    """A column as the terminal draws it: its heading, its cells and how it may shrink."""

    label: str
    cells: tuple[Text, ...]
    justify: str
    folds: bool  # a key or a sentence: wraps and folds instead of widening the table
    key: bool
    floor: int


class FittedTable(Table):
    """A rich ``Table`` that, drawn narrower than its numbers need, draws itself as parts:
    each with the key columns and as many of the others as fit (titled ``title (1/2)``, the
    caption under the last). Its columns and rows are a whole ``Table``'s, for anything that
    reads them."""

    def __init__(self, drawn: Sequence[_Drawn], rows: int, *, title: str,
                 caption: str) -> None:
        super().__init__(title=title, header_style="bold", expand=False, caption=caption)
        self.drawn = tuple(drawn)
        for column in self.drawn:
            self.add_column(**_column_options(column))
        for row in range(rows):
            self.add_row(*(column.cells[row] for column in self.drawn))

    def parts(self, width: int) -> list[list[int]]:
        """The columns of each part at ``width`` characters (:func:`pack_parts`)."""
        return pack_parts([c.floor for c in self.drawn], [c.key for c in self.drawn], width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        parts = self.parts(options.max_width)
        if len(parts) == 1:
            yield from super().__rich_console__(console, options)
            return
        for number, indices in enumerate(parts, 1):
            part = Table(title=f"{self.title} ({number}/{len(parts)})" if self.title else None,
                         header_style=self.header_style, expand=False,
                         caption=self.caption if number == len(parts) else None)
            for index in indices:
                part.add_column(**_column_options(self.drawn[index]))
            for row in range(self.row_count):
                part.add_row(*(self.drawn[index].cells[row] for index in indices))
            yield part


def _column_options(column: _Drawn) -> dict[str, Any]:
    # A header never folds (min_width); a key or a sentence folds a long word rather than cut
    # it; the rest never wraps, and never needs to: the parts leave them their whole width.
    return {"header": column.label, "justify": column.justify,
            "no_wrap": not column.folds, "overflow": "fold",
            "min_width": cell_len(column.label)}


def _drawn(column: Column[Row], rows: Sequence[Row]) -> _Drawn:
    texts = [column.text(row) for row in rows]
    # Text, not markup: a name with brackets (``generate[p16 g8 d0]``) is shown as it is.
    cells = tuple(Text(text, style=column.style(row) if column.style else "")
                  for text, row in zip(texts, rows, strict=True))
    natural = max((cell_len(text) for text in texts), default=0)
    header = cell_len(column.label)
    folds = column.key or column.wrap
    floor = max(header, min(natural, KEY_FLOOR if column.key else WRAP_FLOOR)) if folds \
        else max(header, natural)
    return _Drawn(column.label, cells, "right" if column.number else "left", folds,
                  column.key, floor)


def shown_columns(columns: Iterable[Column[Row]], wide: bool = False) -> list[Column[Row]]:
    """The columns the terminal shows: those not marked ``wide``, or all with ``wide``."""
    return [column for column in columns if wide or not column.wide]


def rich_table(columns: Sequence[Column[Row]], rows: Sequence[Row], *, title: str,
               caption: str) -> FittedTable | None:
    """The terminal's table of ``columns`` (a :class:`FittedTable`; ``None`` without rows)."""
    if not rows:
        return None
    return FittedTable([_drawn(column, rows) for column in columns], len(rows), title=title,
                       caption=caption)


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


def filled_columns(columns: Sequence[Column[Row]], rows: Sequence[Row]) -> list[Column[Row]]:
    """``columns`` less the columns of numbers that no row has a value in (every cell ``-``);
    columns of words stay, even empty: they name the row."""
    return [column for column in columns
            if not column.number or any(column.text(row) not in ("", "-") for row in rows)]


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
