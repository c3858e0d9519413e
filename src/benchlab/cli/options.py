"""What the commands share: options declared once (the store, the lab's device, the one target
of a compare or a track, the measuring settings run and compare both take), parsing of their
values, and the refusals of ``--lab``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from benchlab.cli.helptext import LAB, MEASURE, WHAT_TO_RUN, WHERE
from benchlab.errors import UsageError
from benchlab.schema.settings import setting_info

__all__ = [
    "CacheDirOption",
    "DbOption",
    "DetachOption",
    "IterOption",
    "LabDeviceOption",
    "LabDryRunOption",
    "MinTimeOption",
    "OneTargetOption",
    "QuietOption",
    "WarmupOption",
    "flag_value",
    "percent",
    "refuse_with_lab",
    "refuse_without_lab",
    "setting_help",
    "split_frameworks",
    "split_models",
]

DbOption = Annotated[
    Optional[str],  # noqa: UP007 - typer needs Optional here
    typer.Option("--db", help="SQLite file or database URL (default: per-user SQLite file)."),
]

#: Where exports are kept between runs: run and compare take the same one, so a compare finds
#: what a run exported (a zoo model's files, a user's model's).
CacheDirOption = Annotated[
    Optional[Path],  # noqa: UP007
    typer.Option("--cache-dir", help="Artifact cache directory.", rich_help_panel=WHAT_TO_RUN),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")]
LabDeviceOption = Annotated[
    Optional[str],  # noqa: UP007
    typer.Option(help="With --lab: the device (its lab id).", rich_help_panel=LAB),
]
OneTargetOption = Annotated[
    str, typer.Option("--target", help="The one device it runs on: host, ssh:host=NAME, "
                      "adb:serial=X (as run's --target).", rich_help_panel=WHERE),
]
DetachOption = Annotated[
    bool, typer.Option("--detach", help="With --lab: queue the job(s), print their ids and "
                       "return without waiting ('benchlab lab status' follows them).",
                       rich_help_panel=LAB),
]
LabDryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="With --lab: print the request the lab would be "
                       "sent (its sweep, options and digest), and exit.",
                       rich_help_panel=LAB),
]


def setting_help(setting: str) -> str:
    """An override option's help: the setting's one description (benchlab.schema.settings)."""
    return setting_info(setting).help


# The test settings run and compare both override (TestOverrides), each help its setting's own.
WarmupOption = Annotated[
    Optional[int],  # noqa: UP007
    typer.Option(help=setting_help("warmup"), rich_help_panel=MEASURE),
]
IterOption = Annotated[
    Optional[int],  # noqa: UP007
    typer.Option("--iter", help=setting_help("iter"), rich_help_panel=MEASURE),
]
MinTimeOption = Annotated[
    Optional[float],  # noqa: UP007
    typer.Option(help=setting_help("min_time"), rich_help_panel=MEASURE),
]


def percent(text: str | None, option: str = "--target-ci") -> float | None:
    """``1%`` or ``0.01`` as a fraction; anything else, or not positive, a usage error."""
    if text is None:
        return None
    raw = text.strip()
    try:
        value = float(raw.rstrip("%")) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected a fraction like 0.01 or 1%") from None
    if value <= 0:
        raise UsageError(f"{option} must be positive")
    return value


def flag_value(text: str | None, option: str) -> bool:
    """A FAI-PEP option that takes its switch as a value (``--wipe_cache true``): ``None`` and
    the false words are off, the true words on; any other word is a usage error."""
    if text is None:
        return False
    word = text.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off", ""):
        return False
    raise UsageError(f"{option} takes true or false, not {text!r}")


def split_models(text: str | None) -> list[str] | None:
    """``--models a, b`` → ``["a", "b"]``; ``None`` when none were given."""
    names = [name.strip() for name in (text or "").split(",") if name.strip()]
    return names or None


def split_frameworks(values: list[str]) -> list[str]:
    """``pytorch:mode=eager,threads=2,onnxruntime`` → ``["pytorch:mode=eager,threads=2",
    "onnxruntime"]``: a token with ``=`` but no ``:`` continues the previous framework."""
    out: list[str] = []
    for value in values:
        for token in filter(None, (t.strip() for t in value.split(","))):
            if "=" in token and ":" not in token and out:
                out[-1] += ("," if ":" in out[-1] else ":") + token
            else:
                out.append(token)
    return out


def refuse_with_lab(given: dict[str, Any], why: str) -> None:
    """A usage error naming the options given that a lab job cannot honour, and why."""
    named = [option for option, value in given.items() if value]
    if named:
        raise UsageError(f"{', '.join(named)} with --lab: {why}")


def refuse_without_lab(**given: bool) -> None:
    """``--detach`` and a compare's or a track's ``--dry-run`` only mean something with --lab."""
    named = ["--" + name.replace("_", "-") for name, value in given.items() if value]
    if named:
        raise UsageError(f"{', '.join(named)} goes with --lab")
