"""The one exception tree of benchlab.

Every error benchlab raises on purpose derives from :class:`BenchlabError`, split by whose
problem it is, because the two call for opposite reactions::

    BenchlabError
    ├── UserError                 the input is wrong: fix it, retrying will not help (exit 2)
    │   ├── SpecError             a spec or suite is malformed (file, field path, problem)
    │   ├── ArtifactHashMismatch  a file still fails its declared hash after one re-download
    │   ├── UnknownPluginError    a framework or target name nobody registered
    │   ├── UsageError            contradictory options to run/results/...
    │   └── ModelBuildError       a model definition cannot be built or run eagerly
    ├── InfrastructureError       the machine or network failed: retry, maybe elsewhere (exit 3)
    │   ├── DownloadError         an artifact could not be fetched
    │   ├── TargetError           a target could not push, run or pull
    │   ├── PluginLoadError       a registered plugin failed to import or is malformed
    │   ├── StoreError            the results store cannot be opened or written
    │   │   └── StoreUnavailable  its database server is down or the connection was lost
    │   └── WindowNotCoveredError a power meter's readings do not cover a measured window
    └── CommitFailedError         a commit under `track` did not build or its benchmark failed
                                  (exit 1, as a failed job of `run`)

A job that crashes, hangs or prints garbage is *not* an exception: it becomes a result with a
failed status, so one bad runtime never stops a sweep.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "ArtifactHashMismatch",
    "BenchlabError",
    "CommitFailedError",
    "DownloadError",
    "InfrastructureError",
    "ModeUnavailable",
    "ModelBuildError",
    "PluginLoadError",
    "SpecError",
    "StoreError",
    "StoreUnavailable",
    "TargetError",
    "UnknownPluginError",
    "UsageError",
    "UserError",
    "WindowNotCoveredError",
    "format_field_path",
]


class BenchlabError(Exception):
    """Base of every error benchlab raises deliberately."""

    exit_code = 1


class UserError(BenchlabError):
    """The user's input is wrong; retrying unchanged will fail the same way."""

    exit_code = 2


class InfrastructureError(BenchlabError):
    """Something outside the user's input failed (network, disk, device, plugin install)."""

    exit_code = 3


class SpecError(UserError):
    """A spec or suite file failed to load or validate.

    Carries the file, the field path inside it (``tests[0].warmup``) and what is wrong, so the
    message can name all three without a traceback.
    """

    def __init__(
        self, path: Path | str | None, problem: str, field: Sequence[str | int] | str = ""
    ) -> None:
        self.path = None if path is None else Path(path)
        self.field = field if isinstance(field, str) else format_field_path(field)
        self.problem = problem
        where = str(self.path) if self.path is not None else "<spec>"
        if self.field:
            where += f": {self.field}"
        super().__init__(f"{where}: {problem}")


class ArtifactHashMismatch(UserError):
    """A file's content does not match the hash its spec declares, even after a re-download."""


class UnknownPluginError(UserError):
    """No framework or target is registered under the requested name."""


class UsageError(UserError):
    """Options that make no sense together, or a reference to something that does not exist."""


class ModelBuildError(UserError):
    """A model cannot be built or run eagerly (its factory, inputs or file): nothing to export."""


class DownloadError(InfrastructureError):
    """An artifact could not be fetched from its location."""


class TargetError(InfrastructureError):
    """A target failed to push files, run a command or pull results."""


class PluginLoadError(InfrastructureError):
    """A registered plugin could not be imported or does not implement its protocol."""


class StoreError(InfrastructureError):
    """The results store could not be opened, migrated or written."""


class StoreUnavailable(StoreError):
    """The store's database server cannot be reached now (down, restarting, connection lost).

    Unlike other store errors it is expected to pass: the lab waits and tries again.
    """


class WindowNotCoveredError(InfrastructureError):
    """A power meter's readings do not reach back to a window's start or forward to its end."""


class CommitFailedError(BenchlabError):
    """A commit walked by ``track`` could not be built, or its benchmark produced no latency.

    Like a failed job of ``run`` (exit 1): the message names the commit and why, and where the
    build log is; the commits measured before it stay in the store.
    """


class ModeUnavailable(BenchlabError):
    """An A/B mode cannot measure these two sides (a program that does not speak the step
    protocol, sides that cannot share one process); the message says why, and ``compare``
    falls back to the next mode with that note, instead of failing the job."""


class SideRunFailed(BenchlabError):
    """One side's process failed during a comparison (a crash, a timeout): that job cannot
    be compared; the message names the side and the failure, and the other jobs go on."""


def format_field_path(parts: Sequence[str | int]) -> str:
    """Render a pydantic-style location tuple as ``tests[0].inputs.data``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text
