"""The ``Results`` object returned by :func:`benchlab.run` and read back from the store."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from benchlab.report.export import samples_rows, summary_rows
from benchlab.schema.result import Result, Status

if TYPE_CHECKING:
    import pandas as pd

    from benchlab.harness.planner import Skipped
    from benchlab.store import RunRecord

__all__ = ["Results"]


@dataclass(frozen=True)
class Results(Sequence[Result]):
    """The results of one sweep, in job order, with the run they belong to.

    ``run`` is the store's record of that run as it ended (``None`` for results gathered by
    hand); ``skipped`` lists every framework × model combination that was not run, as
    ``(label, reason)``, and ``skips`` the same as the planner gave them
    (:class:`~benchlab.harness.planner.Skipped`: which framework, whether the user named it,
    whether it cannot run that kind of model at all). A report lists :attr:`skipped_shown`
    and says the rest in the :attr:`skipped_summary` lines.
    """

    items: tuple[Result, ...]
    run: RunRecord | None = None
    skipped: tuple[tuple[str, str], ...] = ()
    skips: tuple[Skipped, ...] = ()

    @property
    def skipped_shown(self) -> tuple[tuple[str, str], ...]:
        """The ``skipped`` a report lists one by one: all but those of frameworks the user did
        not name that cannot run that kind of model (:attr:`Skipped.shown`; all of
        ``skipped`` when ``skips`` is empty)."""
        if not self.skips:
            return self.skipped
        return tuple((s.label, s.reason) for s in self.skips if s.shown)

    @property
    def skipped_summary(self) -> tuple[str, ...]:
        """One line per kind of model for the skips :attr:`skipped_shown` leaves out, e.g.
        ``3 frameworks run text generators only: llamacpp, ortgenai, ovgenai (name one with
        -f to see why)``."""
        if not self.skips:
            return ()
        # Imported here: results read back from a store (the lab's pages) have no skips and
        # need not load the planner and the adapters' registry behind it.
        from benchlab.harness.planner import skip_summary

        return skip_summary(self.skips)

    @property
    def run_id(self) -> int | None:
        """The run's id in its store (``benchlab report RUN_ID``)."""
        return None if self.run is None else self.run.id

    @property
    def run_uuid(self) -> str | None:
        """The run's UUID, the same in every store it reaches."""
        return None if self.run is None else self.run.uuid

    @overload
    def __getitem__(self, index: int) -> Result: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Result]: ...

    def __getitem__(self, index: int | slice) -> Result | Sequence[Result]:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Result]:
        return iter(self.items)

    @property
    def failed(self) -> list[Result]:
        """Results whose status is not ``ok``."""
        return [r for r in self.items if r.status is not Status.OK]

    @property
    def exit_code(self) -> int:
        """0 when every job succeeded, 1 when any failed (what the CLI exits with)."""
        return 1 if self.failed else 0

    def to_dataframe(self) -> pd.DataFrame:
        """One row per result × metric key, summary statistics as columns (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(summary_rows(self.items))

    def samples_dataframe(self) -> pd.DataFrame:
        """One row per raw sample (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(samples_rows(self.items))

    def to_dicts(self) -> list[dict[str, Any]]:
        """Every result in its schema-versioned JSON form."""
        return [r.to_dict() for r in self.items]
