"""Bad input never becomes a traceback: mutated real specs and suites, and fuzzed CLI options.

The spec cases come from ``bench/fuzz_specs.py`` (which runs 10,000 of them for the figure in
docs/performance.md); hypothesis drives its random choices here, so a failure shrinks and is
replayed from the example database.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "faipep" / "mlp_observer.json"


def _fuzz_module() -> Any:
    sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("fuzz_specs", REPO / "bench" / "fuzz_specs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_specs"] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


FUZZ = _fuzz_module()


@pytest.fixture(scope="module")
def workspace() -> Iterator[Any]:
    space = FUZZ.Workspace()
    yield space
    space.close()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(rng=st.randoms(use_true_random=False))
def test_a_mutated_spec_loads_or_fails_with_a_user_error_naming_the_file(
    workspace: Any, rng: random.Random
) -> None:
    case = FUZZ.mutated_case(rng)
    problem = FUZZ.check(workspace.write(case))
    assert problem is None, f"{case.seed} mutated as:\n{case.text[:2000]}\n\n{problem}"


_NUMBERS = st.one_of(st.integers(-10, 10**12).map(str), st.floats(allow_nan=True).map(str),
                     st.sampled_from(["", " ", "1%", "-1", "0", "nan", "inf", "1e999", "x"]))
_TEXT = st.text(max_size=40).filter(lambda t: not t.lstrip().lower().startswith(("ssh", "adb"))
                                    and not t.startswith("-"))
_OPTIONS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["--iter", "--warmup", "--repeat", "--min-time", "--threads",
                               "--timeout", "--cooldown", "--time-budget",
                               "--temperature-gate"]), _NUMBERS),
    st.tuples(st.just("--target-ci"), st.one_of(_NUMBERS, _TEXT)),
    st.tuples(st.sampled_from(["-f", "--cpu-list", "--string-map", "--energy", "--target"]),
              _TEXT),
), max_size=4)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=_OPTIONS)
def test_fuzzed_cli_options_end_in_an_exit_code_not_a_traceback(
    options: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    from benchlab.cli.commands import main

    argv = ["benchlab", "run", str(SPEC), "--dry-run", "--db", str(tmp_path / "r.db")]
    for name, value in options:
        argv += [name, value]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as ended:
        main()
    err = capsys.readouterr().err
    assert ended.value.code in (0, 2), (argv, err)
    assert "Traceback" not in err, (argv, err)
