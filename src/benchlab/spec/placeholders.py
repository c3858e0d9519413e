"""``{name}`` placeholders in spec commands, and the map of values they are replaced with.

Commands are shell text full of braces that are not ours (``awk '{print $1}'``, ``${HOME}``), so
only names present in the map are replaced, ``${...}`` is never touched, and a replacement is
never expanded again.

The values of a spec's own placeholders (its extra model and test keys) may name other
placeholders, as FAI-PEP's ``"images_per_iter": "{total_images}/{repeat}"`` does: the map
resolves them, and a value that becomes arithmetic on numbers (``50000/1000``) is computed
(``50``) by :func:`arithmetic`, which reads numbers and ``+ - * / //`` only.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import PurePath

from benchlab.errors import UsageError
from benchlab.spec.types import BenchmarkSpec, TestCase

__all__ = [
    "arithmetic",
    "parse_string_map",
    "placeholder_map",
    "resolve_nested",
    "substitute",
    "unresolved",
]

# A dollar sign before the brace is shell parameter expansion, not a placeholder.
_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_.\-]*)\}")
_FILE_PREFIXES = ("files.", "input_files.", "output_files.")
# Names that no program means literally: FAI-PEP's upper-case string-map names ({FAIPEPROOT},
# {MODEL_DIR}, {INDEX}) and dotted references to a spec's files, model keys and inputs.
_OURS = re.compile(r"[A-Z][A-Z0-9_]*|(?:files|input_files|output_files|model|inputs)\..+")
_OPERATORS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}


def substitute(text: str, mapping: Mapping[str, str]) -> str:
    """Replace each ``{name}`` (``name`` may be dotted, like ``files.model``) found in ``mapping``.

    Unknown names and ``${...}`` are left as written; replacements are not expanded again.
    """

    def replace(match: re.Match[str]) -> str:
        value = mapping.get(match.group(1))
        return match.group(0) if value is None else str(value)

    return _PLACEHOLDER.sub(replace, text)


def unresolved(text: str, *, every: bool = False) -> list[str]:
    """The placeholders still in ``text`` after substitution that a spec means as ours.

    Those are upper-case names (FAI-PEP's ``{FAIPEPROOT}``, ``{MODEL_DIR}``) and dotted
    references (``{files.x}``, ``{output_files.y}``); other braces are shell text (``awk
    '{print}'``). With ``every``, any ``{name}`` counts (for file locations, which are not shell).
    """
    names = (m.group(1) for m in _PLACEHOLDER.finditer(text))
    return list(dict.fromkeys(n for n in names if every or _OURS.fullmatch(n)))


class _NotArithmetic(Exception):
    pass


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise _NotArithmetic


def arithmetic(text: str) -> str | None:
    """``text`` computed, when it is arithmetic on numbers with at least one operator.

    Only number literals, parentheses, unary ``+``/``-`` and ``+ - * / //`` are read (never
    ``eval``). The result is written as an integer when it is whole: ``"50000/1000"`` gives
    ``"50"``, ``"7/2"`` gives ``"3.5"``. Anything else (``"0,1"``, ``"a/b"``, ``"3"``) gives
    None. Raises UsageError on a division by zero.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not isinstance(tree, ast.BinOp):
        return None
    try:
        value = _evaluate(tree)
    except _NotArithmetic:
        return None
    except ZeroDivisionError:
        raise UsageError(f"{text.strip()!r} divides by zero") from None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return str(value)


def resolve_nested(values: dict[str, str], names: Iterable[str]) -> None:
    """Substitute the placeholders inside the values of ``names``, in place, then compute
    each changed value that became arithmetic (:func:`arithmetic`).

    A value naming another of ``names`` is resolved after it, so chains work (``a`` names
    ``b``, which names ``c``); a name in a cycle is left as written. Raises UsageError naming
    the placeholder whose value divides by zero.
    """
    pending = set(names) & values.keys()
    done: set[str] = set()

    def resolve(name: str, path: tuple[str, ...]) -> None:
        text = values[name]
        for match in _PLACEHOLDER.finditer(text):
            other = match.group(1)
            if other in pending and other not in done and other not in path:
                resolve(other, (*path, name))
        others = {k: v for k, v in values.items() if k != name and k not in path}
        new = substitute(text, others)
        if new != text:
            try:
                values[name] = arithmetic(new) or new
            except UsageError as exc:
                raise UsageError(f"placeholder {{{name}}}: {exc}") from None
        done.add(name)

    for name in sorted(pending):
        if name not in done and "{" in values[name]:
            resolve(name, ())


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

    Finally the spec's own placeholders (its extra model and test keys, unless ``extra``
    replaces them) are resolved against the whole map (:func:`resolve_nested`).
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
    own = [*model.placeholders, *(f"model.{k}" for k in model.placeholders), *test.placeholders]
    resolve_nested(values, [k for k in own if k not in (extra or {})])
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
