"""Load spec and suite files into the frozen dataclasses of :mod:`benchlab.spec.types`.

Every problem, from a missing file to a bad value deep in a test, becomes one
:class:`~benchlab.errors.SpecError` naming the file and the field as written in the file
(``tests[0].warmup``); when a file has several problems the message lists them all, one a line.
The loader only reads: it never writes to a spec.

Paths starting with ``//`` are relative to ``root_dir`` (FAI-PEP's ``--root_model_dir``). For the
spec and suite paths themselves the loader resolves them; file *locations* inside a spec are
kept as written, for the artifact cache to resolve.
"""

from __future__ import annotations

import difflib
import glob
import json
import os
from itertools import product
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from benchlab.errors import SpecError, format_field_path
from benchlab.schema.generation import Generation
from benchlab.spec import models as m
from benchlab.spec.faipep import (
    UNHONOURED_MODEL_KEYS,
    UNHONOURED_NESTED_KEYS,
    UNHONOURED_TEST_KEYS,
    UNKNOWN_NESTED_KEY,
    effective_settings,
    unhonoured_power_fields,
)
from benchlab.spec.types import (
    BenchmarkSpec,
    FileRef,
    FrameworkConfig,
    InputDef,
    ModelDef,
    OutputFile,
    Suite,
    TestCase,
)

__all__ = ["load", "load_spec", "load_suite"]

Issue = tuple[str, str]  # (field path, problem)
_GLOB_CHARS = frozenset("*?[")
_M = TypeVar("_M", bound=BaseModel)


def load_spec(
    path: str | Path, *, root_dir: Path | None = None, defaults: Mapping[str, Any] | None = None
) -> BenchmarkSpec:
    """Load and validate one spec file.

    ``defaults`` has the shape of a suite's ``defaults`` block: ``model`` is deep-merged under
    the spec's model, ``test`` holds defaults for every test, ``frameworks`` is used when the
    spec lists none; the spec's own values always win. A ``//`` path is relative to ``root_dir``.
    """
    checked = _validate(m.DefaultsModel, dict(defaults or {}), None, ("defaults",))
    file = _resolve(path, root_dir, None, "")
    return _build_spec(_read(file), file, checked)


def load_suite(path: str | Path, *, root_dir: Path | None = None) -> Suite:
    """Load a suite file and every spec it lists, with the suite's defaults applied.

    Accepts benchlab's ``{specs: [...], defaults: {...}}`` and FAI-PEP's benchmark lists
    ``{benchmarks: [...], meta: {...}}`` (``meta`` is merged into every model). Entries are
    relative to the suite file, may be glob patterns, or ``//`` paths relative to ``root_dir``.
    """
    file = _resolve(path, root_dir, None, "")
    return _build_suite(_read(file), file, root_dir)


def load(path: str | Path, *, root_dir: Path | None = None) -> tuple[BenchmarkSpec, ...]:
    """Load a file that is either a spec or a suite, and return its specs."""
    file = _resolve(path, root_dir, None, "")
    raw = _read(file)
    if "model" in raw or "tests" in raw:
        return (_build_spec(raw, file, m.DefaultsModel()),)
    if "specs" in raw or "benchmarks" in raw:
        return _build_suite(raw, file, root_dir).specs
    raise SpecError(file, "neither a spec (model, tests) nor a suite (specs or benchmarks)")


# -- reading ----------------------------------------------------------------------------------


def _resolve(path: str | Path, root_dir: Path | None, owner: Path | None, field: str) -> Path:
    text = str(path)
    if text.startswith("//"):
        if root_dir is None:
            raise SpecError(owner or Path(text), f"{text!r} is relative to the root dir, "
                            "but no root dir was given", field)
        return Path(root_dir) / text[2:]
    if owner is not None and not Path(text).is_absolute():
        return Path(os.path.normpath(owner.parent / text))
    return Path(text)


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(path, "file not found") from None
    except UnicodeDecodeError:
        raise SpecError(path, "not UTF-8 text") from None
    except OSError as exc:
        raise SpecError(path, f"cannot read the file: {exc.strerror or exc}") from None
    if not text.strip():
        raise SpecError(path, "the file is empty")
    suffix = path.suffix.lower()
    if suffix == ".json":
        data = _parse_json(text, path)
    elif suffix in (".yaml", ".yml"):
        data = _parse_yaml(text, path)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = _parse_yaml(text, path)
    if not isinstance(data, dict):
        raise SpecError(path, f"expected a mapping at the top level, got {type(data).__name__}")
    return data


def _parse_json(text: str, path: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(path, f"invalid JSON at line {exc.lineno}, column {exc.colno}: "
                        f"{exc.msg}") from None


def _parse_yaml(text: str, path: Path) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(path, f"invalid YAML{where}: {problem}") from None


# -- validation errors ------------------------------------------------------------------------


def _raise(path: Path | None, issues: Sequence[Issue]) -> NoReturn:
    field, problem = issues[0]
    error = SpecError(path, problem, field)
    if len(issues) > 1:
        lines = [str(SpecError(path, p, f)) for f, p in issues]
        error.args = ("\n".join(lines),)
    raise error


def _owner(root: type[BaseModel], parent: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that validates the mapping found at ``parent`` (for key suggestions)."""
    shape = tuple("#" if isinstance(p, int) else p for p in parent)
    if root is m.SuiteModel:
        table = {(): m.SuiteModel, ("defaults",): m.DefaultsModel,
                 ("defaults", "test"): m.TestDefaultsModel}
    elif root is m.DefaultsModel:
        table = {(): m.DefaultsModel, ("test",): m.TestDefaultsModel}
    else:
        table = {(): m.SpecModel, ("model",): m.ModelModel, ("tests", "#"): m.TestModel}
    if len(shape) >= 2 and shape[-2] in ("files", "input_files"):
        return m.FileModel
    if len(shape) >= 2 and shape[-2] == "inputs":
        return m.InputModel
    return table.get(shape)


def _known_keys(cls: type[BaseModel]) -> list[str]:
    keys: list[str] = []
    for name, info in cls.model_fields.items():
        choices = getattr(info.validation_alias, "choices", None)
        keys += [str(c) for c in choices] if choices else [info.alias or name]
    return keys


def _issues(error: ValidationError, root: type[BaseModel], prefix: tuple[Any, ...]) -> list[Issue]:
    issues: list[Issue] = []
    for item in error.errors():
        loc = tuple(item["loc"])
        problem = item["msg"].removeprefix("Value error, ")
        owner = _owner(root, loc[:-1]) if loc else None
        key = loc[-1] if loc else None
        unknown = item["type"] == "extra_forbidden" or (
            item["type"] == "string_type" and owner is not None and key not in _known_keys(owner)
        )
        if unknown and owner is not None and isinstance(key, str):
            close = difflib.get_close_matches(key, _known_keys(owner), n=1)
            problem = f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
            if item["type"] == "string_type":
                problem += "; unknown keys are allowed only with string values (placeholders)"
        elif item["type"] == "missing":
            problem = f"missing required key {key!r}"
        elif not isinstance(item["input"], dict | list) and item["type"] != "value_error":
            problem += f" (got {item['input']!r})"
        issues.append((format_field_path((*prefix, *loc)), problem))
    return issues


def _validate(
    cls: type[_M], data: dict[str, Any], path: Path | None, prefix: tuple[Any, ...] = ()
) -> _M:
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        _raise(path, _issues(exc, cls, prefix))


# -- building ---------------------------------------------------------------------------------


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = _deep_merge(below, value)
        else:
            merged[key] = value
    return merged


def _ref(key: str, file: m.FileModel, base_dir: Path) -> FileRef:
    return FileRef(
        key=key,
        location=file.location,
        base_dir=base_dir,
        sha256=file.sha256.lower() if file.sha256 else None,
        md5=file.md5.lower() if file.md5 else None,
        filename=file.filename,
    )


def _entry(entry: str | None, base_dir: Path) -> str | None:
    """A ``file.py:factory`` entry is made absolute: jobs run in their own work directory."""
    if entry is None:
        return None
    target, sep, func = entry.rpartition(":")
    if sep and target.endswith(".py") and not Path(target).is_absolute():
        return f"{(base_dir / target).resolve()}:{func}"
    return entry


def _model_def(model: m.ModelModel, base_dir: Path) -> ModelDef:
    placeholders = dict(model.model_extra or {})
    for key in ("kind", "category", "group"):
        value = getattr(model, key)
        if value is not None:
            placeholders.setdefault(key, value)
    return ModelDef(
        name=model.name,
        format=model.format,
        files={key: _ref(key, file, base_dir) for key, file in model.files.items()},
        framework=model.framework,
        entry=_entry(model.entry, base_dir),
        description=model.description,
        placeholders=placeholders,
        preprocess=model.preprocess.command_list() if model.preprocess else (),
        postprocess=model.postprocess.command_list() if model.postprocess else (),
        libraries=_libraries(model, base_dir),
    )


def _libraries(model: m.ModelModel, base_dir: Path) -> dict[str, FileRef]:
    """FAI-PEP's ``libraries`` (a list of files, or files by name) by the name each gets on the
    target: its ``filename``, else its location's last part, the name the loader looks for."""
    given = model.libraries or []
    entries = list(given.values()) if isinstance(given, dict) else list(given)
    named = {(e.filename or e.location.rstrip("/").rsplit("/", 1)[-1]): e for e in entries}
    return {name: _ref(f"libraries.{name}", entry, base_dir) for name, entry in named.items()}


def _accuracy_flow(settings: dict[str, Any], index: int, issues: list[Issue]) -> None:
    """Turn a test's validated ``preprocess``/``postprocess``/``output_files`` into the
    dataclass fields, in place: commands as tuples, output files as :class:`OutputFile`."""
    for key in ("preprocess", "postprocess"):
        steps = settings.pop(key, None)
        settings[key] = steps.command_list() if steps is not None else ()
    outputs: dict[str, OutputFile] = {}
    named: dict[str, str] = {}
    for key, entry in (settings.pop("output_files", None) or {}).items():
        name = entry.host_name
        if name in named:
            issues.append((f"tests[{index}].output_files.{key}", f"its host copy {name!r} "
                           f"would overwrite output_files.{named[name]}'s; give a filename"))
        named.setdefault(name, key)
        outputs[key] = OutputFile(key=key, location=entry.location, filename=name)
    settings["output_files"] = outputs


def _nested_ignored(prefix: str, block: BaseModel | None) -> list[tuple[str, str]]:
    """The keys of a host-step block or output file entry that are not acted on."""
    if block is None:
        return []
    return [(f"{prefix}.{key}", UNHONOURED_NESTED_KEYS.get(key, UNKNOWN_NESTED_KEY))
            for key in (block.model_extra or {})]


def _flow_ignored(spec: m.SpecModel) -> list[tuple[str, str]]:
    found = [item for key in ("preprocess", "postprocess")
             for item in _nested_ignored(f"model.{key}", getattr(spec.model, key))]
    for index, test in enumerate(spec.tests):
        for key in ("preprocess", "postprocess"):
            found += _nested_ignored(f"tests[{index}].{key}", getattr(test, key))
        for name, entry in (test.output_files or {}).items():
            found += _nested_ignored(f"tests[{index}].output_files.{name}", entry)
    return found


def _expand(
    inputs: Mapping[str, m.InputModel], index: int, issues: list[Issue]
) -> list[tuple[str, tuple[InputDef, ...]]]:
    """One (identifier suffix, inputs) pair per shape index; no suffix when there is one shape."""
    if not inputs:
        return [("", ())]
    counts = {name: len(spec.shapes) for name, spec in inputs.items()}
    first, count = next(iter(counts.items()))
    mismatched = [name for name, n in counts.items() if n != count]
    for name in mismatched:
        issues.append((f"tests[{index}].inputs.{name}.shapes", f"has {counts[name]} shapes but "
                       f"inputs.{first} has {count}; every input needs the same number"))
    if mismatched:
        return []
    expanded = []
    for k in range(count):
        defs = tuple(InputDef(name, tuple(s.shapes[k]), s.dtype) for name, s in inputs.items())
        label = ",".join("x".join(map(str, d.shape)) for d in defs)
        expanded.append(("" if count == 1 else f"[{label}]", defs))
    return expanded


def _generations(block: m.GenerateModel | None) -> list[tuple[str, Generation | None]]:
    """One (identifier suffix, generation) pair per prompt length and depth; no suffix when
    there is one of each."""
    if block is None:
        return [("", None)]
    pairs = list(product(block.prompt_tokens, block.depth))
    return [("" if len(pairs) == 1 else f"[p{p},d{d}]",
             Generation(prompt_tokens=p, new_tokens=block.new_tokens, depth=d,
                        compare_tokens=block.compare_tokens)) for p, d in pairs]


def _build_spec(raw: dict[str, Any], path: Path, defaults: m.DefaultsModel) -> BenchmarkSpec:
    if defaults.model and isinstance(raw.get("model"), Mapping):
        raw = {**raw, "model": _deep_merge(defaults.model, raw["model"])}
    spec = _validate(m.SpecModel, raw, path)
    base_dir = Path(os.path.abspath(path)).parent
    default_placeholders = dict(defaults.test.model_extra or {}) if defaults.test else {}
    issues: list[Issue] = []
    tests: list[TestCase] = []
    first_use: dict[str, int] = {}
    power_ignored: list[tuple[str, str]] = []
    for index, test in enumerate(spec.tests):
        settings = effective_settings(test, spec.model, defaults.test)
        power_ignored += [(f"tests[{index}].{key}", why)
                          for key, why in unhonoured_power_fields(test, settings.get("energy"))]
        inputs = settings.pop("inputs", {})
        files = {k: _ref(k, f, base_dir) for k, f in settings.pop("input_files", {}).items()}
        _accuracy_flow(settings, index, issues)
        for key in ("commands", "statistics"):
            if settings.get(key) is None:  # ``commands: null`` means none
                settings.pop(key, None)
            else:
                settings[key] = tuple(settings[key])
        if spec.model.command_args and settings.get("commands"):
            # FAI-PEP appends the model's (or a suite meta's) extra arguments to each command
            # that runs the benchmark program.
            settings["commands"] = tuple(f"{c} {spec.model.command_args}" if "{program}" in c
                                         else c for c in settings["commands"])
        placeholders = {**default_placeholders, **(test.model_extra or {})}
        identifier = test.identifier.replace("{ID}", str(index))
        generations = _generations(settings.pop("generate", None))
        scenario = settings.get("scenario")
        if scenario is not None:
            generative = generations[0][1] is not None
            if generative and not (scenario.name == "offline" or scenario.token_bounds):
                issues.append((f"tests[{index}].scenario", "a generative test runs the offline "
                               "scenario, or server with ttft_bound_ms/tpot_bound_ms"))
            elif not generative and scenario.token_bounds:
                issues.append((f"tests[{index}].scenario", "ttft_bound_ms and tpot_bound_ms "
                               "are for a generative test (give generate)"))
        for (suffix, defs), (more, generate) in product(_expand(inputs, index, issues),
                                                        generations):
            case = TestCase(identifier=identifier + suffix + more, inputs=defs,
                            input_files=files, placeholders=placeholders, generate=generate,
                            **settings)
            if case.identifier in first_use:
                issues.append((f"tests[{index}].identifier", f"duplicate identifier "
                               f"{case.identifier!r} (also tests[{first_use[case.identifier]}])"))
            first_use.setdefault(case.identifier, index)
            tests.append(case)
    if issues:
        _raise(path, issues)
    frameworks = spec.frameworks or defaults.frameworks or []
    ignored = [(f"model.{key}", why) for key, why in UNHONOURED_MODEL_KEYS.items()
               if getattr(spec.model, key, None) is not None
               and not (key == "command_args" and any(t.commands for t in tests))]
    ignored += [(f"tests[{index}].{key}".replace(".commands_mapping", ".commands"), why)
                for index, test in enumerate(spec.tests)
                for key, why in UNHONOURED_TEST_KEYS.items()
                if getattr(test, key, None) is not None
                # In a power test, ``method`` picks the meter (software: the device's own).
                and not (key == "method" and test.metric == "power")]
    ignored += _flow_ignored(spec)
    ignored += power_ignored
    return BenchmarkSpec(
        path=Path(os.path.abspath(path)),
        model=_model_def(spec.model, base_dir),
        tests=tuple(tests),
        frameworks=tuple(FrameworkConfig(f.name, dict(f.model_extra or {})) for f in frameworks),
        ignored=tuple(ignored),
    )


def _suite_entries(entry: str, suite: Path, root_dir: Path | None, field: str) -> list[Path]:
    resolved = _resolve(entry, root_dir, suite, field)
    try:
        if _GLOB_CHARS & set(entry):
            matches = sorted(Path(p) for p in glob.glob(str(resolved), recursive=True))
            if not matches:
                raise SpecError(suite, f"{entry!r} matches no file", field)
            return matches
        if not resolved.is_file():
            raise SpecError(suite, f"no such spec file: {resolved}", field)
    except OSError as exc:  # a name too long for the file system, say
        raise SpecError(suite, f"cannot look up {entry[:80]!r}: {exc.strerror or exc}",
                        field) from None
    return [resolved]


def _build_suite(raw: dict[str, Any], path: Path, root_dir: Path | None) -> Suite:
    suite = _validate(m.SuiteModel, raw, path)
    key, entries = ("specs", suite.specs) if suite.specs is not None else ("benchmarks",
                                                                          suite.benchmarks)
    defaults = suite.defaults
    if suite.meta:
        merged = _deep_merge(suite.meta, defaults.model)
        defaults = defaults.model_copy(update={"model": merged})
    specs: list[BenchmarkSpec] = []
    for index, entry in enumerate(entries or ()):
        field = f"{key}[{index}]"
        for file in _suite_entries(entry, path, root_dir, field):
            raw_spec = _read(file)
            if "model" not in raw_spec and ("specs" in raw_spec or "benchmarks" in raw_spec):
                raise SpecError(path, f"{file} is a suite; a suite cannot list suites", field)
            specs.append(_build_spec(raw_spec, file, defaults))
    return Suite(path=Path(os.path.abspath(path)), specs=tuple(specs))
