"""How a spec file's values are read at the boundary: FAI-PEP's loose spellings (a value
wrapped in a one-element list, numbers for strings, an empty hash), statistics' names, CPU
lists and tasksets, fractions written as percentages; the annotated field types the spec
models declare with them (:mod:`benchlab.spec.models`)."""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, GetJsonSchemaHandler, WithJsonSchema
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from benchlab.spec.faipep import taskset_to_cpu_list

__all__ = [
    "IGNORED",
    "SCALAR_SCHEMA",
    "STATISTIC_NAMES",
    "CpuList",
    "Env",
    "OrOneElementList",
    "Statistic",
    "TargetFraction",
    "check_taskset",
    "empty_hash_is_none",
    "is_remote",
    "number_to_str",
    "one_command_to_list",
    "one_to_list",
    "scalar_to_str",
    "scenario_by_name",
]

STATISTIC_NAMES = frozenset({"count", "mean", "median", "stdev", "min", "max", "mad", "cv"})
PERCENTILE = re.compile(r"p(\d+(?:\.\d+)?)")
CPU_LIST = re.compile(r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*")
IGNORED = "FAI-PEP key: accepted and ignored."


def is_remote(location: str) -> bool:
    """Whether a file location is downloaded (``https://…``) rather than read from disk."""
    return "://" in location and not location.startswith("file://")


def check_statistic(raw: str) -> str:
    name = raw.strip().lower()  # FAI-PEP writes "MAD"
    if name in STATISTIC_NAMES:
        return name
    match = PERCENTILE.fullmatch(name)
    if match is None:
        close = difflib.get_close_matches(name, sorted(STATISTIC_NAMES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown statistic {raw!r}{hint}; use one of "
                         f"{', '.join(sorted(STATISTIC_NAMES))} or pN with 0 <= N <= 100")
    if not 0 <= float(match.group(1)) <= 100:
        raise ValueError(f"percentile {raw!r} is outside p0..p100")
    return name


def parse_fraction(value: Any) -> Any:
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            return float(value.strip()[:-1]) / 100
        except ValueError:
            raise ValueError(f"{value!r} is not a percentage like '1%'") from None
    return value


def one_to_list(value: Any) -> Any:
    """One number where a list of them is allowed: a list of one."""
    return [value] if isinstance(value, int) and not isinstance(value, bool) else value


def scenario_by_name(value: Any) -> Any:
    """``scenario: offline``: a scenario named alone, with its default settings."""
    return {"name": value} if isinstance(value, str) else value


def one_command_to_list(value: Any) -> Any:
    # Some FAI-PEP specs write one command as a plain string.
    return [value] if isinstance(value, str) else value


def number_to_str(value: Any) -> Any:
    # FAI-PEP writes numeric placeholders ("total_images": 50000); {total_images} is its text.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def empty_hash_is_none(value: Any) -> Any:
    # FAI-PEP writes "md5": "" for a file it cannot know the hash of.
    return None if value == "" else value


def check_cpu_list(text: str) -> str:
    if not CPU_LIST.fullmatch(text):
        raise ValueError(f"{text!r} is not a CPU list like '0-3,6'")
    for part in text.split(","):
        low, _, high = part.partition("-")
        if high and int(high) < int(low):
            raise ValueError(f"range {part!r} runs backwards")
    return text


def check_taskset(mask: str) -> str:
    taskset_to_cpu_list(mask)
    return mask


def scalar_to_str(value: Any) -> Any:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value) if isinstance(value, int | float) else value


def stringify_values(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: scalar_to_str(v) for k, v in value.items()}
    return value


class OrOneElementList:
    """JSON Schema marker: the value may also be wrapped in a one-element list (FAI-PEP)."""

    def __get_pydantic_json_schema__(
        self, core: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        single = handler(core)
        return {"anyOf": [single, {"type": "array", "items": single, "minItems": 1,
                                   "maxItems": 1}]}


SCALAR_SCHEMA = {"type": ["string", "number", "boolean"]}
Statistic = Annotated[str, AfterValidator(check_statistic)]
CpuList = Annotated[
    str,
    BeforeValidator(scalar_to_str),
    AfterValidator(check_cpu_list),
    WithJsonSchema({"type": ["string", "integer"]}),
]
Env = Annotated[
    dict[str, str],
    BeforeValidator(stringify_values),
    WithJsonSchema({"type": "object", "additionalProperties": SCALAR_SCHEMA}),
]
TargetFraction = Annotated[
    float,
    BeforeValidator(parse_fraction),
    WithJsonSchema(
        {"anyOf": [{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                   {"type": "string", "pattern": r"^\s*[0-9.]+\s*%\s*$"}]}
    ),
]
