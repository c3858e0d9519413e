"""docs/faipep.md, the page for FAI-PEP users, names every option of FAI-PEP's three entry
points, and every test it says holds a row exists.

* Each option of FAI-PEP's README is in the table of its entry point (first column).
* Each ``tests/...py::name`` the page names is a file of this repository that defines ``name``.
* No row is left with ``TODO`` in place of its test.

Files only: nothing is run.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "faipep.md"

# The options of FAI-PEP's README (https://github.com/facebook/FAI-PEP#readme; the same text at
# commit 7c1a57e), copied from its usage and argument lines, grouped by entry point. -h/--help
# is left out. run_bench.py's usage line has only --reset_options; -b is in its example command.
OPTIONS: dict[str, tuple[str, ...]] = {
    "run_bench.py": ("-b", "--reset_options"),
    "harness.py": (
        "--android_dir", "--backend", "-b", "--benchmark_file", "-d", "--devices",
        "--excluded_devices", "--framework", "--info", "--local_reporter",
        "--simple_local_reporter", "--model_cache", "--device", "-p", "--platform",
        "--platform_sig", "--wipe_cache", "--program", "--reboot", "--regressed_types",
        "--remote_reporter", "--remote_access_token", "--root_model_dir", "--run_type",
        "--screen_reporter", "--simple_screen_reporter", "--set_freq", "--shared_libs",
        "--timeout", "--user_identifier",
    ),
    "repo_driver.py": (
        "--ab_testing", "--base_commit", "--branch", "--commit", "--commit_file", "--exec_dir",
        "--framework", "--frameworks_dir", "--interval", "--platforms", "--regression",
        "--remote_repository", "--repo", "--repo_dir", "--same_host", "--status_file", "--step",
    ),
    # Not in the README; in FAI-PEP's benchmarking/harness.py.
    "Other FAI-PEP options": ("--monsoon_map", "--hash_platform_mapping", "--user_string"),
}

_HEADING = re.compile(r"^## (.+?)\s*$", re.M)
_CODE = re.compile(r"`([^`\n]+)`")
_FLAG = re.compile(r"(?<![\w-])(--[a-z_]+|-[a-z])(?![\w-])")
_TEST_ID = re.compile(r"\b(tests/[\w/]+\.py)::([\w:]+)(?:\[[^\]\s`]*\])?")


def sections(text: str) -> dict[str, str]:
    """Each ``## heading`` of the page and the text under it."""
    marks = list(_HEADING.finditer(text))
    return {m[1]: text[m.end():nxt.start() if nxt else len(text)]
            for m, nxt in zip(marks, [*marks[1:], None], strict=True)}


def table_rows(section: str) -> list[list[str]]:
    """The cells of each row of the tables in ``section``, header and rule left out."""
    rows = []
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if cells[0] == "FAI-PEP option" or set(line) <= set("|-: "):
            continue
        rows.append(cells)
    return rows


def flags_in(cell: str) -> set[str]:
    """The option names written as code in a table cell: `-d`, `--devices A,B`."""
    return {flag for code in _CODE.findall(cell) for flag in _FLAG.findall(code)}


def test_every_option_of_the_readme_is_in_the_table_of_its_entry_point() -> None:
    found = sections(PAGE.read_text(encoding="utf-8"))
    missing = []
    for entry, options in OPTIONS.items():
        assert entry in found, f"docs/faipep.md has no section '## {entry}'"
        rows = table_rows(found[entry])
        assert rows and all(len(row) == 3 for row in rows), f"{entry}: a row without 3 cells"
        listed = set().union(*(flags_in(row[0]) for row in rows))
        missing += [f"{entry}: {option}" for option in options if option not in listed]
    assert not missing, "options missing from docs/faipep.md:\n" + "\n".join(missing)


def test_every_row_says_what_holds_it() -> None:
    found = sections(PAGE.read_text(encoding="utf-8"))
    empty = [f"{entry}: {row[0]}" for entry in OPTIONS for row in table_rows(found[entry])
             if not row[1] or not row[2]]
    assert not empty, "rows without a benchlab cell or a held-by cell:\n" + "\n".join(empty)


def named_tests(text: str) -> list[tuple[str, str]]:
    """(file, function) for each ``tests/path.py::name`` (a parametrize id stripped)."""
    return [(path, name.split("::")[-1]) for path, name in _TEST_ID.findall(text)]


def test_every_named_test_exists() -> None:
    named = named_tests(PAGE.read_text(encoding="utf-8"))
    assert len(named) > 20  # the parser still finds them
    problems = []
    for path, name in sorted(set(named)):
        file = ROOT / path
        if not file.is_file():
            problems.append(f"{path}::{name}: no such file")
        elif not re.search(rf"^\s*(?:async\s+)?def {re.escape(name)}\(",
                           file.read_text(encoding="utf-8"), re.M):
            problems.append(f"{path}::{name}: {path} defines no {name}")
    assert not problems, "docs/faipep.md names tests that do not exist:\n" + "\n".join(problems)


def test_the_checks_read_what_they_must() -> None:
    text = "\n".join([
        "## harness.py", "",
        "| FAI-PEP option | benchlab | held by |", "|---|---|---|",
        "| `-d`, `--devices A,B` | `--target X` | `tests/a/b.py::test_one[x-1]` |",
        "| `--run_type {benchmark,verify}` | words | TODO(lead) |",
        "## Next", "| `--other` | x | y |",
    ])
    rows = table_rows(sections(text)["harness.py"])
    assert [flags_in(row[0]) for row in rows] == [{"-d", "--devices"}, {"--run_type"}]
    assert named_tests(text) == [("tests/a/b.py", "test_one")]


def test_no_row_waits_for_its_test() -> None:
    text = PAGE.read_text(encoding="utf-8")
    left = [line.split(" | ")[0] for line in text.splitlines() if "TODO" in line]
    assert not left, "rows still marked TODO:\n" + "\n".join(left)
