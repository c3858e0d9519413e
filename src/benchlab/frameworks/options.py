"""The options a framework takes, declared once: each key's type, default, allowed values and
meaning.

An adapter lists its :class:`FrameworkOption` s in its ``declared_options`` class attribute
(a third-party plug-in does the same). The harness checks every configuration against that
declaration before anything runs (:func:`option_problem` here; the registry's
:func:`benchlab.plugins.check_configurations` looks each framework up), so a misspelt key
(``-f onnxruntime:provders=CUDAExecutionProvider``) or a value outside the declared ones is
refused, naming the key it probably meant, instead of being measured and labelled as if
honoured. ``benchlab frameworks`` prints the same declarations
(:func:`benchlab.plugins.framework_options`), and tables label a configuration from them
(:class:`benchlab.plugins.ConfigLabels`).

A plug-in without a ``declared_options`` attribute declares nothing: its options pass
through unchecked, as before declarations existed, and ``benchlab frameworks`` says so. An
empty tuple declares that it takes no option at all.

Options several adapters take (``threads``, ``file``, the native tool's ``binary``,
``flags`` and ``libs``) are declared here once, the LLM libraries' ``loop`` in
:mod:`benchlab.frameworks.llm_library`; ``precision`` has one meaning everywhere but its own
values per runtime (:func:`precision_option`). Plain data, and light: the reporters label
tables with it, so it imports no runtime, no pydantic model, no spec loader.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.errors import PluginLoadError

__all__ = [
    "FILE",
    "LIBS",
    "NATIVE_BINARY",
    "NATIVE_FLAGS",
    "NATIVE_LIBS",
    "NATIVE_TOOL_OPTIONS",
    "THREADS",
    "FrameworkOption",
    "OptionProblem",
    "declaration_problems",
    "declared_options",
    "option_problem",
    "precision_option",
    "unknown_key",
]

#: The option types a declaration may name, as ``benchlab frameworks`` shows them.
_TYPE_NAMES = {bool: "bool", int: "int", float: "number", str: "text"}


@dataclass(frozen=True, slots=True)
class FrameworkOption:
    """One key a framework's configuration takes (``-f name:key=value``, a spec's
    ``frameworks`` entry).

    ``type`` is ``bool``, ``int``, ``float`` or ``str``. ``default`` is what applies when the
    key is not given (``None``: nothing fixed; ``help`` says who decides, e.g. the test's
    ``threads``). ``choices`` are the allowed values where they are finite; ``words`` are
    strings taken besides a number (``streams``: ``auto``); ``minimum``/``maximum`` bound an
    ``int``. ``several``: a list of values in a spec, joined by ``+`` on the command line
    (``providers``). ``bare``: a table labels the value alone (``executorch[xnnpack,int8]``)
    instead of ``key=value``; only an option with ``choices`` may be bare, and the bare
    options of one framework share no value, so a bare label always names one key.
    """

    name: str
    type: type
    help: str
    default: Any = None
    choices: tuple[Any, ...] = ()
    words: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    several: bool = False
    bare: bool = False

    @property
    def type_name(self) -> str:
        """``int``, ``bool``, ``text``, ``number``; ``text list`` for ``several``."""
        name = _TYPE_NAMES.get(self.type, getattr(self.type, "__name__", str(self.type)))
        return f"{name} list" if self.several else name

    @property
    def default_text(self) -> str:
        """The default as the command line writes it (``""``: none fixed)."""
        return "" if self.default is None else _shown(self.default)

    @property
    def allowed(self) -> str:
        """The allowed values in words (``""``: any value of the type)."""
        if self.choices:
            return ", ".join(map(_shown, self.choices))
        if self.type is bool:
            return "true, false"
        bounds = ""
        if self.minimum is not None and self.maximum is not None:
            bounds = f"{self.minimum}-{self.maximum}"
        elif self.minimum is not None:
            bounds = f">= {self.minimum}"
        elif self.maximum is not None:
            bounds = f"<= {self.maximum}"
        return ", ".join(filter(None, (bounds, *self.words)))

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not one this option takes (``None``: it is)."""
        if self.several and isinstance(value, list | tuple):
            return next(filter(None, (self._one_problem(v) for v in value)), None)
        return self._one_problem(value)

    def _one_problem(self, value: Any) -> str | None:
        if isinstance(value, str) and value in self.words:
            return None
        if not _of_type(value, self.type):
            return f"must be {self._expected()}, not {value!r}"
        if self.choices and value not in self.choices:
            return f"must be one of {', '.join(map(_shown, self.choices))}, not {value!r}"
        if self.type is int and (
                (self.minimum is not None and value < self.minimum)
                or (self.maximum is not None and value > self.maximum)):
            return f"must be {self._expected()}, not {value!r}"
        return None

    def _expected(self) -> str:
        if self.type is bool:
            return "true or false"
        what = {int: "an integer", float: "a number", str: "text"}.get(self.type, self.type_name)
        if self.type is int and self.minimum is not None and self.maximum is not None:
            what += f" from {self.minimum} to {self.maximum}"
        elif self.type is int and self.minimum is not None:
            what += f" >= {self.minimum}"
        elif self.type is int and self.maximum is not None:
            what += f" <= {self.maximum}"
        return " or ".join((what, *self.words))

    def label(self, value: Any) -> str:
        """How a table names this option set to ``value``: the value alone when ``bare``,
        else ``key=value``."""
        shown = "+".join(map(_shown, value)) if isinstance(value, list | tuple) else _shown(value)
        return shown if self.bare else f"{self.name}={shown}"


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _of_type(value: Any, kind: type) -> bool:
    """Whether ``value`` is of the declared ``kind``. A number given for a text option is
    taken: the command line turns any word that reads as a number into one (``file=2``)."""
    if isinstance(value, bool):
        return kind is bool
    if kind is str:
        return isinstance(value, str | int | float)
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


# -- options many frameworks take ---------------------------------------------------------

#: The framework option naming a native benchmark binary (a host path, pushed, or a path on
#: the target): ``tflite:binary=./benchmark_model`` runs LiteRT's own tool instead of the runner.
NATIVE_BINARY = "binary"
#: The option giving a native tool extra flags of its own (``flags=--use_gpu=true``).
NATIVE_FLAGS = "flags"
#: The option naming shared libraries the native tool loads, host paths separated by ``:``
#: (``binary=./benchmark_model,libs=libfoo.so:libbar.so``): pushed beside it, found through
#: ``LD_LIBRARY_PATH`` (:mod:`benchlab.harness.nativefiles`).
NATIVE_LIBS = "libs"

THREADS = FrameworkOption(
    "threads", int, "threads the runtime computes with (default: the test's threads, else "
    "the runtime's own choice)", minimum=1)
FILE = FrameworkOption(
    "file", str, "the model file to run, by its model.files key (default: the one the "
    "other options and the zoo's naming pick)")
#: Read by the harness for any job (:func:`benchlab.harness.nativefiles.job_libraries`), so
#: declared by every framework that runs a program of its own: a native tool, a test's commands.
LIBS = FrameworkOption(
    NATIVE_LIBS, str, "shared libraries the native program loads, host paths separated by "
    "':', pushed beside it and found through LD_LIBRARY_PATH")
#: ``binary``, ``flags`` and ``libs``: the runtime's own benchmark tool instead of the runner
#: (docs/runtimes.md, "Native tools instead of the runner").
NATIVE_TOOL_OPTIONS = (
    FrameworkOption(NATIVE_BINARY, str, "run the runtime's native benchmark tool instead of "
                    "benchlab's runner: a host path (pushed) or a path on the target"),
    FrameworkOption(NATIVE_FLAGS, str, "extra flags for the native tool, space-separated"),
    LIBS,
)


def precision_option(choices: Sequence[str], what: str, default: str | None = None
                     ) -> FrameworkOption:
    """``precision``, with a runtime's own values (``choices``) and what it picks there
    (``what``: "which .onnx file"). The first choice is the default unless told; the value
    alone labels a table (``onnxruntime[int8]``)."""
    return FrameworkOption("precision", str, what, default=default or choices[0],
                           choices=tuple(choices), bare=True)


# -- checking a configuration -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OptionProblem:
    """What is wrong with one option of a configuration: its ``key`` (a spec's error names
    the field by it) and the whole sentence."""

    key: str
    message: str


def declared_options(framework: Any) -> tuple[FrameworkOption, ...] | None:
    """The options ``framework`` (an adapter) declares, or ``None`` when it declares none
    (a plug-in without ``declared_options``: its options pass unchecked). A declaration that
    is not a sequence of well-formed :class:`FrameworkOption` s is the plug-in's fault."""
    declared = getattr(framework, "declared_options", None)
    if declared is None:
        return None
    name = getattr(framework, "name", type(framework).__name__)
    if not isinstance(declared, Sequence) or not all(
            isinstance(option, FrameworkOption) for option in declared):
        raise PluginLoadError(f"framework {name!r}: declared_options must be a sequence of "
                              "benchlab.frameworks.options.FrameworkOption")
    problems = declaration_problems(declared)
    if problems:
        raise PluginLoadError(f"framework {name!r} declares its options wrongly: "
                              + "; ".join(problems))
    return tuple(declared)


def declaration_problems(declared: Sequence[FrameworkOption]) -> list[str]:
    """What is wrong with a declaration: a key declared twice, a bare option without choices,
    two bare options sharing a value (its label would not say which), a default the option
    itself refuses."""
    problems = []
    names = [option.name for option in declared]
    problems += [f"{name!r} is declared twice" for name in sorted(set(names))
                 if names.count(name) > 1]
    seen: dict[Any, str] = {}
    for option in declared:
        if option.type not in _TYPE_NAMES:
            problems.append(f"{option.name!r} has type {option.type!r}; "
                            f"declare one of {', '.join(t.__name__ for t in _TYPE_NAMES)}")
            continue
        if option.default is not None and option.problem(option.default):
            problems.append(f"{option.name!r}'s default {option.problem(option.default)}")
        if not option.bare:
            continue
        if not option.choices:
            problems.append(f"{option.name!r} is bare but has no choices")
        for value in option.choices:
            if value in seen and seen[value] != option.name:
                problems.append(f"bare options {seen[value]!r} and {option.name!r} share the "
                                f"value {value!r}")
            seen.setdefault(value, option.name)
    return problems


def option_problem(framework: str, declared: Sequence[FrameworkOption] | None,
                   options: Mapping[str, Any]) -> OptionProblem | None:
    """The first option of ``framework``'s configuration ``options`` that its declaration
    refuses: a key it does not take (with the nearest one it does), or a value it does not
    take. ``None`` when every option is fine, or when nothing is declared."""
    if declared is None:
        return None
    by_name = {option.name: option for option in declared}
    for key, value in options.items():
        option = by_name.get(key)
        if option is None:
            return OptionProblem(key, unknown_key(framework, key, sorted(by_name)))
        why = option.problem(value)
        if why:
            return OptionProblem(key, f"{framework} option {key} {why}")
    return None


def unknown_key(framework: str, key: str, known: list[str]) -> str:
    """The sentence for a key ``framework`` does not take, with the nearest it does."""
    if not known:
        return f"{framework} takes no options, and was given {key!r}"
    close = difflib.get_close_matches(key, known, n=1)
    guess = f" (did you mean {close[0]}?)" if close else ""
    return (f"{framework} takes no option {key!r}{guess}; it takes {', '.join(known)} "
            "(benchlab frameworks describes each)")
