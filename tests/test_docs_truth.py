"""The documentation states facts that live in code; these checks fail when the two drift apart.

* Every ``benchlab ...`` command line in README.md and docs/ (fenced blocks and inline code)
  names a real command of the CLI, and every flag written after it is one of its options.
* The package count in docs/reproducibility.md is the number of packages in the lock.
* The percentages of the lab's ▲/▼ rule in docs/lab.md are the constants of ``lab/flags.py``.
* docs/your-model.md lists exactly the formats of ``DECODER_FORMATS``.
* docs/generative.md names every generative framework pyproject.toml registers.
* README.md and docs/specs.md count the FAI-PEP sample files that tests/spec/faipep_sample holds.
* README.md and docs/performance.md quote the suite's cost from bench/results/suite_cost.json.

Files, the CLI's click tree and the registered framework classes only: nothing is run.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import typer
from machine_facts import locked_versions

from benchlab.cli.commands import app
from benchlab.exporting.formats import DECODER_FORMATS
from benchlab.lab.flags import FLAG_HISTORY_LEVEL, FLAG_LEVEL, FLAG_MIN_EFFECT

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# Shell separators between commands on one line (a bare | inside a word is an alternative,
# as in `benchlab zoo list|export|spec`, not a pipe).
_SEPARATOR = re.compile(r"\s*(?:&&|\|\||;|\s\|\s)\s*")
# A benchlab invocation: after a prompt, `do`, a systemd `ExecStart=`, or a venv's bin/.
_INVOCATION = re.compile(r"^(?:\$ )?(?:do |ExecStart=)?(?:[\w./-]*/)?benchlab (?=\S)")
_COMMENT = re.compile(r"(?:^|\s)#.*$")
# Box-drawing and arrow characters: the rest of a diagram's line is not the command's.
_DIAGRAM = re.compile(r"[\u2500-\u25ff].*$")
_PLACEHOLDERS = {"...", "…"}


def code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, code) for each line of a fenced block, continuations (``\\``) joined,
    and for each inline code span; prose outside code is never read as a command."""
    found: list[tuple[int, str]] = []
    in_fence, pending, start = False, "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            in_fence, pending = not in_fence, ""
            continue
        if not in_fence:
            found += [(number, m[1]) for m in _CODE_SPAN.finditer(line)]
            continue
        start = start if pending else number
        joined = f"{pending} {line.strip()}" if pending else line.strip()
        if joined.endswith("\\"):
            pending = joined[:-1].rstrip()
            continue
        pending = ""
        found.append((start, joined))
    return found


def invocations() -> list[tuple[str, list[str]]]:
    """("doc:line", the words after ``benchlab``) for every benchlab command in the docs."""
    found = []
    for doc in DOCS:
        for number, code in code_lines(doc.read_text()):
            code = _DIAGRAM.sub("", _COMMENT.sub("", code)).strip()
            for segment in _SEPARATOR.split(code):
                match = _INVOCATION.match(segment)
                if match:
                    where = f"{doc.relative_to(ROOT)}:{number}"
                    found.append((where, shlex.split(segment[match.end():])))
    return found


@functools.cache
def _cli() -> Any:
    return typer.main.get_command(app)


def _options(command: Any) -> set[str]:
    # click adds --help itself; it is not among the command's params.
    return {"--help", *(o for p in command.params for o in (*p.opts, *p.secondary_opts)
                        if o.startswith("-"))}


def check_invocation(words: list[str]) -> list[str]:
    """What is wrong with ``benchlab <words>``: unknown commands and unknown flags."""
    command, path = _cli(), ["benchlab"]
    # Typer ships its own copy of click, so a group is told by its `commands`, not its class.
    while hasattr(command, "commands") and words and not words[0].startswith("-"):
        word = words.pop(0)
        if word in _PLACEHOLDERS:
            return []
        alternatives = [w for w in word.split("|") if w not in _PLACEHOLDERS]
        missing = [w for w in alternatives if w not in command.commands]
        if missing:
            return [f"{' '.join(path)} has no command {m!r}" for m in missing]
        if len(alternatives) > 1:
            return []  # `lab init|serve|...` names commands, not one invocation
        command = command.commands[word]
        path.append(word)
    known = _options(command)
    flags = [w.lstrip("[").split("=")[0].rstrip("]") for w in words if w.lstrip("[").startswith("-")]
    return [f"{' '.join(path)} has no option {flag}" for flag in flags
            if re.fullmatch(r"--?[A-Za-z][\w-]*", flag) and flag not in known]


def test_the_docs_name_benchlab_commands():
    # Guards the parser itself: were it to find nothing, every check below would pass.
    assert len(invocations()) > 100


def test_every_documented_command_and_flag_exists():
    problems = [f"{where}: {problem}  (benchlab {' '.join(words)})"
                for where, words in invocations() for problem in check_invocation(list(words))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("words, problem", [
    (["run", "--no-such-flag"], "benchlab run has no option --no-such-flag"),
    (["zoo", "frobnicate"], "benchlab zoo has no command 'frobnicate'"),
    (["run", "spec.json", "-f", "onnxruntime", "--dry-run"], None),
    (["zoo", "list|export|spec"], None),
])
def test_the_command_check_catches_drift(words, problem):
    assert check_invocation(words) == ([problem] if problem else [])


def test_continued_lines_are_joined():
    text = "```bash\nbenchlab run \\\n  --dry-run\n```\nsee `benchlab zoo list` here\n"
    assert code_lines(text) == [(2, "benchlab run --dry-run"), (5, "benchlab zoo list")]


def test_package_count_in_reproducibility_doc_matches_the_lock():
    text = (ROOT / "docs" / "reproducibility.md").read_text()
    counts = [int(n) for n in re.findall(r"\b(\d+) packages\b", text)]
    assert counts, "docs/reproducibility.md no longer says how many packages the lock pins"
    assert set(counts) == {len(locked_versions())}, "update the count in docs/reproducibility.md"


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def test_lab_flag_rule_quotes_the_constants_in_flags_py():
    # The Overview bullet of docs/lab.md states the rule lab/flags.py:changed applies.
    text = (ROOT / "docs" / "lab.md").read_text()
    bullet = re.search(r"^\* \*\*Overview\*\*.*?(?=^\* |\Z)", text, re.M | re.S)
    assert bullet, "docs/lab.md has no Overview bullet"
    quoted = set(re.findall(r"\d+(?:\.\d+)?%", bullet[0]))
    assert quoted == {_percent(FLAG_MIN_EFFECT), _percent(FLAG_HISTORY_LEVEL),
                      _percent(FLAG_LEVEL)}


def _code_spans(text: str) -> set[str]:
    return {m[1] for m in _CODE_SPAN.finditer(text)}


def test_your_model_doc_lists_every_decoder_format():
    # The sentence on a user's Llama names the formats it is exported to, no more, no fewer.
    text = (ROOT / "docs" / "your-model.md").read_text()
    listed = re.search(r"to the decoder formats \(`DECODER_FORMATS`.*?\. The export", text, re.S)
    assert listed, "docs/your-model.md no longer lists the decoder formats"
    assert _code_spans(listed[0]) - {"DECODER_FORMATS"} == set(DECODER_FORMATS)


def _registered_frameworks() -> dict[str, type]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = {}
    for name, target in pyproject["project"]["entry-points"]["benchlab.frameworks"].items():
        module, _, attr = target.partition(":")
        found[name] = getattr(importlib.import_module(module), attr)
    return found


def framework_names_in(text: str) -> set[str]:
    """Framework names a doc gives as code: a span that is one name (`ortgenai`) or a
    framework choice (`-f ovgenai:precision=int4`, in a span or a fenced block)."""
    found = set()
    for _, code in code_lines(text):
        found |= set(re.findall(r"(?:^|\s)-f\s+([a-z]\w*)", code))
        if re.fullmatch(r"[a-z]\w*", code):
            found.add(code)
    return found


def test_generative_doc_names_every_generative_framework():
    generative = {name for name, cls in _registered_frameworks().items()
                  if getattr(cls, "generative_backend", "")}
    assert {"ortgenai", "ovgenai", "llamacpp"} <= generative  # the check itself still finds them
    named = framework_names_in((ROOT / "docs" / "generative.md").read_text())
    assert not generative - named, f"docs/generative.md does not name {sorted(generative - named)}"


@pytest.mark.parametrize("text, names", [
    ("runs on `ortgenai` too\n", {"ortgenai"}),
    ("```bash\nbenchlab run -f ovgenai:precision=int4\n```\n", {"ovgenai"}),
    ("OpenVINO GenAI runs it, `ovgenai_int4` its file\n", {"ovgenai_int4"}),
    ("ONNX Runtime GenAI, in prose only\n", set()),
])
def test_the_framework_name_check_reads_code_only(text, names):
    assert framework_names_in(text) == names


def test_readme_and_specs_doc_count_the_faipep_sample():
    count = len(list((ROOT / "tests" / "spec" / "faipep_sample").rglob("*.json")))
    for doc in ("README.md", "docs/specs.md"):
        text = " ".join((ROOT / doc).read_text().split())
        stated = re.findall(r"\b(\d+) sample files\b", text)
        assert stated, f"{doc} no longer says how many FAI-PEP sample files the tests plan"
        assert {int(n) for n in stated} == {count}, f"update the sample count in {doc}"


def test_readme_and_performance_doc_quote_the_suites_measured_cost():
    """The test command's figures in README.md and docs/performance.md are the ones
    bench/suite_cost.py wrote, and the budget they name is pyproject.toml's."""
    figures = json.loads((ROOT / "bench" / "results" / "suite_cost.json").read_text())["figures"]
    budget = figures["suite_budget"]
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    stated = {
        "pytest wall": f"{figures['wall_s'] / 60:.1f} min of wall time",
        "CPU": f"{(budget['pytest_cpu_s'] + budget['children_cpu_s']) / 60:.1f} CPU minutes",
        "builds": f"builds before the tests {budget['builds']['wall_s'] / 60:.1f} min",
        "cost": f"{budget['cost']['minutes']:.1f} reference CPU minutes",
        "budget": f"cost budget {float(ini['cost_budget_minutes']):g}",
    }
    for doc in ("README.md", "docs/performance.md"):
        text = " ".join((ROOT / doc).read_text().split())
        missing = [name for name, words in stated.items() if words not in text]
        assert not missing, f"{doc} no longer quotes bench/results/suite_cost.json: {missing}"


RUNTIME_VERSION = re.compile(
    r"\b(torch|onnxruntime|ai-edge-litert|executorch|openvino) (\d+\.\d+(?:\.\d+)?)(\+cpu)?\b")


def runtime_versions_off_the_lock(text: str, pins: dict[str, str]) -> list[str]:
    """Each ``<runtime> <version>`` in ``text`` that is not the lock's pin and whose paragraph
    (two lines either side) does not say how it stands to the lock: a version that went stale."""
    lines = text.splitlines()
    stale = []
    for index, line in enumerate(lines):
        for match in RUNTIME_VERSION.finditer(line):
            pinned = pins.get(match[1], "").split("+")[0]
            if match[2] != pinned and "lock" not in " ".join(lines[max(0, index - 2):index + 3]):
                stale.append(f"line {index + 1}: {match[0]} (the lock pins {pinned})")
    return stale


def test_runtime_versions_in_the_docs_are_the_locks_or_say_they_are_not() -> None:
    # A figure measured with another version keeps it, said beside the lock's; a plain mention
    # is the version the test command installs (requirements/lock.txt).
    pins = locked_versions()
    stale = {str(path.relative_to(ROOT)): found for path in [ROOT / "README.md",
                                                              *sorted((ROOT / "docs").rglob("*.md"))]
             if (found := runtime_versions_off_the_lock(path.read_text(), pins))}
    assert stale == {}
    assert runtime_versions_off_the_lock("onnxruntime 1.31.1 measured", pins) == [
        f"line 1: onnxruntime 1.31.1 (the lock pins {pins['onnxruntime']})"]
