"""Mutate real specs and suites at random and count the cases that end in a traceback.

Each case takes one of the project's own spec or suite files (benchlab and FAI-PEP forms, JSON
and YAML, with placeholders), applies one to three mutations (a value replaced by ``null``, a
wrong type, a huge string, NaN, a deleted or added key, a value wrapped in a list), writes it as
JSON or YAML, sometimes truncated or with stray bytes, then loads it with ``benchlab.spec.load``
and plans it for this host. A case passes when loading and planning succeed or raise one of
benchlab's user errors naming the file; anything else is a traceback and is counted.

    .venv/bin/python bench/fuzz_specs.py            # 10,000 cases, seed 0
    .venv/bin/python bench/fuzz_specs.py --smoke    # 200 cases
    .venv/bin/python bench/fuzz_specs.py --cases 2000

``tests/spec/test_fuzz.py`` drives the same :func:`mutated_case` from hypothesis.
"""

from __future__ import annotations

import copy
import json
import math
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: Real inputs, relative to the repository: benchlab and FAI-PEP specs and suites.
SEEDS = (
    "examples/faipep/mlp_observer.json",
    "examples/ab/spin.yaml",
    "tests/spec/data/resnet.yaml",
    "tests/spec/data/faipep/models/squeezenet/squeezenet.json",
    "tests/spec/data/faipep/benchmarks/cnn.json",
    "tests/spec/data/suite/suite.yaml",
    "tests/spec/data/suite/specs/tiny.json",
)
_ODD_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2**63, -1e308, 1e308, math.nan, math.inf, "", " ", "x" * 100_000,
    "{ID}", "{files.nosuch}", "{", "1%", "-5", "0-", "ü\u0000\ud7ff", [], [None], {}, {"a": None},
    [[1, 2], "x"], "https://", "file:///nonexistent", "//", "..", "/",
)


def _odd(rng: random.Random) -> Any:
    # A copy: the lists and dicts must not be shared, or a later mutation could nest one
    # inside itself.
    return copy.deepcopy(rng.choice(_ODD_VALUES))


@dataclass(frozen=True, slots=True)
class Case:
    """One mutated input: which seed it came from, its text and the suffix it is written with."""

    seed: str
    text: str
    suffix: str


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON-like document (the root excluded)."""
    found = []
    if isinstance(node, dict):
        items: Any = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return found
    for key, value in items:
        path = (*prefix, key)
        found.append(path)
        found += _paths(value, path)
    return found


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


def _mutate(doc: Any, rng: random.Random) -> Any:
    paths = _paths(doc)
    if not paths:
        return _odd(rng)
    path = rng.choice(paths)
    parent, key = _parent(doc, path), path[-1]
    action = rng.randrange(5)
    if action == 0:
        parent[key] = _odd(rng)
    elif action == 1:
        del parent[key]
    elif action == 2:
        parent[key] = [parent[key]]
    elif action == 3 and isinstance(parent, dict):
        parent[rng.choice(["iter", "warmup", "frameworks", "specs", "tests", "model", "inputs",
                           "files", "env", "weird key", "cpu-list", "target_ci"])] = rng.choice(
            _ODD_VALUES)
    else:
        parent[key] = str(parent[key]) if rng.random() < 0.5 else repr(parent[key])
    return doc


def mutated_case(rng: random.Random) -> Case:
    """One mutated input drawn with ``rng`` (any ``random.Random``, hypothesis' included)."""
    seed = rng.choice(SEEDS)
    source = REPO / seed
    text = source.read_text(encoding="utf-8")
    doc = yaml.safe_load(text) if source.suffix == ".yaml" else json.loads(text)
    for _ in range(rng.randint(1, 3)):
        doc = _mutate(doc, rng)
    as_yaml = rng.random() < 0.5
    try:
        out = yaml.safe_dump(doc, allow_unicode=True) if as_yaml else json.dumps(doc)
    except (ValueError, yaml.YAMLError):
        out = json.dumps(doc, default=str)
    cut = rng.random()
    if cut < 0.1:
        out = out[: rng.randrange(len(out) + 1)]
    elif cut < 0.15:
        at = rng.randrange(len(out) + 1)
        out = out[:at] + rng.choice(["\x00", "\ufeff", "\t:", "]]", "}{", "---\n", "&a *a"]) + out[at:]
    return Case(seed, out, ".yaml" if as_yaml else rng.choice([".json", ".JSON", ".txt", ""]))


class Workspace:
    """A copy of the seeds' directories, so relative files and suite entries resolve."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="benchlab-fuzz-"))
        for seed in SEEDS:
            target = self.root / seed
            if not target.parent.exists():
                shutil.copytree((REPO / seed).parent, target.parent)

    def write(self, case: Case, name: str = "mutated") -> Path:
        """Write ``case`` beside its seed (its relative paths resolve as the seed's do)."""
        path = (self.root / case.seed).parent / f"{name}{case.suffix}"
        path.write_text(case.text, encoding="utf-8", errors="surrogatepass")
        return path

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _host() -> Any:
    """This host as a target, describing itself without reading device state each time."""
    from benchlab.targets.host import HostTarget

    class QuietHost(HostTarget):
        def describe(self) -> dict[str, Any]:
            return {"hostname": "fuzz"}

    return QuietHost()


def check(path: Path) -> str | None:
    """Load and plan ``path``; ``None`` when that worked or failed with a user error naming
    the file, else the unexpected exception's last traceback lines."""
    from benchlab.errors import UserError
    from benchlab.harness.planner import plan
    from benchlab.spec import FrameworkConfig, load

    try:
        plan(list(load(path)), _host(), frameworks=[FrameworkConfig("generic")])
    except UserError as exc:
        if path.name not in str(exc) and "spec" not in type(exc).__name__.lower():
            return f"{type(exc).__name__} without the file name: {exc}"
        return None
    except Exception:  # noqa: BLE001 - counting these is the point
        return "".join(traceback.format_exc().splitlines(keepends=True)[-3:])
    return None


def main() -> None:
    argv, cases = sys.argv[1:], 10_000
    if "--cases" in argv:
        at = argv.index("--cases")
        cases = int(argv[at + 1])
        del argv[at:at + 2]
    args = parse_args(__doc__.splitlines()[0], argv)
    count = 200 if args.smoke else cases
    rng = random.Random(0)
    workspace = Workspace()
    failures: Counter[str] = Counter()
    started = time.perf_counter()
    try:
        for index in range(count):
            case = mutated_case(rng)
            problem = check(workspace.write(case))
            if problem is not None:
                failures[problem.strip().splitlines()[-1][:160]] += 1
                if sum(failures.values()) <= 3:
                    print(f"case {index} ({case.seed}):\n{problem[-600:]}", file=sys.stderr)
    finally:
        workspace.close()
    elapsed = time.perf_counter() - started
    tracebacks = sum(failures.values())
    print(f"{count} cases, {tracebacks} tracebacks, {elapsed:.0f} s")
    for what, n in failures.most_common(10):
        print(f"  {n:5d}  {what}")
    write_result("fuzz_specs", args, {"cases": count, "tracebacks": tracebacks,
                                      "kinds": dict(failures.most_common(20)),
                                      "seconds": round(elapsed, 1)})


if __name__ == "__main__":
    main()
