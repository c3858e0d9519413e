"""``{name}`` placeholders in spec commands, and the map of values they are replaced with.

Commands are shell text full of braces that are not ours (``awk '{print $1}'``, ``${HOME}``), so
only names present in the map are replaced, ``${...}`` is never touched, and a replacement is
never expanded again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import PurePath

from benchlab.errors import UsageError
from benchlab.spec.types import BenchmarkSpec, TestCase

__all__ = ["parse_string_map", "placeholder_map", "substitute"]

# A dollar sign before the brace is shell parameter expansion, not a placeholder.
_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_.\-]*)\}")
_FILE_PREFIXES = ("files.", "input_files.", "output_files.")


def substitute(text: str, mapping: Mapping[str, str]) -> str:
    """Replace each ``{name}`` (``name`` may be dotted, like ``files.model``) found in ``mapping``.

    Unknown names and ``${...}`` are left as written; replacements are not expanded again.
    """

    def replace(match: re.Match[str]) -> str:
        value = mapping.get(match.group(1))
        return match.group(0) if value is None else str(value)

    return _PLACEHOLDER.sub(replace, text)


def placeholder_map(
    spec: BenchmarkSpec,
    test: TestCase,
    *,
    files: Mapping[str, PurePath | str],
    target_dir: str,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Every placeholder value for one test of a spec, as used by :func:`substitute`.

    ``files`` maps placeholder names to where the file lies for the command, e.g.
    ``{"files.model": Path(...), "input_files.data": Path(...)}``; its keys must start with
    ``files.``, ``input_files.`` or ``output_files.``. Later sources win over earlier ones:

    1. the model: ``name``, ``format``, ``framework``, ``description``, also as ``model.<key>``,
       then the model's extra string keys (both bare and as ``model.<key>``);
    2. the test: ``identifier``, ``metric``, ``warmup``, ``iter``, ``repeat``, ``threads``,
       ``inputs.<name>.shape`` (``1,3,224,224``) and ``inputs.<name>.type``, then its extra
       string keys;
    3. ``files``, then ``TGTDIR`` (``target_dir``, where the files lie on the target);
    4. ``extra``: the user's ``--string-map``, which overrides everything.
    """
    model = spec.model
    values: dict[str, str] = {}
    model_fields = {"name": model.name, "format": model.format, "description": model.description}
    if model.framework is not None:
        model_fields["framework"] = model.framework
    for key, value in {**model_fields, **model.placeholders}.items():
        values[key] = value
        values[f"model.{key}"] = value
    values.update(
        identifier=test.identifier,
        metric=test.metric,
        warmup=str(test.warmup),
        iter=str(test.iter),
        repeat=str(test.repeat),
    )
    if test.threads is not None:
        values["threads"] = str(test.threads)
    for item in test.inputs:
        values[f"inputs.{item.name}.shape"] = ",".join(map(str, item.shape))
        values[f"inputs.{item.name}.type"] = item.dtype
    values.update(test.placeholders)
    for key, path in files.items():
        if not key.startswith(_FILE_PREFIXES):
            raise ValueError(f"file placeholder {key!r} must start with one of {_FILE_PREFIXES}")
        values[key] = str(path)
    values["TGTDIR"] = target_dir
    values.update(extra or {})
    return values


def parse_string_map(text: str) -> dict[str, str]:
    """Parse the CLI's ``--string-map``: a JSON object ``{"K": "v"}`` or ``K=v,K2=v2``.

    JSON numbers and booleans become their JSON text. Raises UsageError on anything else.
    """
    stripped = text.strip()
    if not stripped:
        return {}
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            problem = f"{exc.msg} at column {exc.colno}"
            raise UsageError(f"--string-map is not valid JSON: {problem}") from None
        if not isinstance(data, dict):
            raise UsageError("--string-map JSON must be an object")
        result: dict[str, str] = {}
        for key, value in data.items():
            if isinstance(value, dict | list) or value is None:
                raise UsageError(f"--string-map value of {key!r} must be a string or number")
            result[key] = value if isinstance(value, str) else json.dumps(value)
        return result
    result = {}
    for pair in stripped.split(","):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--string-map entry {pair!r} is not KEY=VALUE "
                             '(use JSON like {"K": "a,b"} for values with commas)')
        result[key.strip()] = value
    return result
