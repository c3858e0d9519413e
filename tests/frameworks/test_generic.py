"""Tests of the ``generic`` framework: the spec's commands, substituted, and their output read."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from benchlab.errors import SpecError
from benchlab.frameworks.base import Framework, JobContext
from benchlab.frameworks.generic import GenericFramework
from benchlab.protocol.lines import format_metric
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.targets.base import CommandResult, RunRequest
from benchlab.targets.host import HostTarget

from .availability import probe

CONFIG = FrameworkConfig("generic", {})


@pytest.fixture
def fw() -> GenericFramework:
    return GenericFramework()


def _result(stdout: str = "", stderr: str = "") -> CommandResult:
    return CommandResult(returncode=0, stdout=stdout, stderr=stderr, duration=0.1)


def test_is_a_framework_available_everywhere(fw: GenericFramework) -> None:
    assert isinstance(fw, Framework)
    assert fw.availability().ok
    assert probe("generic", "torch", "onnxruntime")["imported"] == []


def test_configurations(fw: GenericFramework, make_model: Callable[..., ModelDef]) -> None:
    model = make_model({"model": "m.bin"}, format="custom")
    assert fw.configurations(model, []) == [CONFIG]
    requested = [FrameworkConfig("generic", {"variant": "a"})]
    assert fw.configurations(model, requested) == requested


def test_invocations_substitute_placeholders_in_every_command(
    fw: GenericFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
) -> None:
    model = make_model({"model": "m.bin"}, format="custom")
    ctx = make_ctx(
        model, CONFIG, files={"files.model": "/t/m.bin"}, workdir="/t", iter=7, threads=3,
        env={"MY_VAR": "x"},
        commands=(
            "{PYTHON} bench.py --model {files.model} --iter {iter} --out {TGTDIR}/out",
            "echo {identifier} {unknown} ${HOME}",
        ),
    )
    first, second = fw.invocations(ctx)
    assert first.argv == f"{sys.executable} bench.py --model /t/m.bin --iter 7 --out /t/out"
    # Unknown names and shell variables are left for the shell to see as written.
    assert second.argv == "echo t0 {unknown} ${HOME}"
    for invocation in (first, second):
        assert invocation.env["MY_VAR"] == "x"
        assert invocation.env["OMP_NUM_THREADS"] == "3"


def test_missing_commands_are_a_spec_error(
    fw: GenericFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
) -> None:
    ctx = make_ctx(make_model({}, format="custom"), CONFIG, identifier="no-cmds")
    with pytest.raises(SpecError) as info:
        fw.invocations(ctx)
    assert info.value.path == Path("/specs/tiny.json")
    assert info.value.field == "tests[no-cmds].commands"


def test_parse_reads_metric_lines_from_stdout_and_stderr(fw: GenericFramework) -> None:
    observer = "PyTorchObserver " + json.dumps(
        {"type": "NET", "metric": "latency", "unit": "ms", "value": 3.0}
    )
    results = [
        _result(stdout="starting\n" + format_metric("NET", "latency", 1.0, "ms") + "\n"),
        _result(stderr="log noise\n" + observer + "\nI/tag: " + observer.replace("3.0", "4.0")),
    ]
    parsed = fw.parse(results)
    assert [s.value for s in parsed.samples if s.key == "NET latency"] == [1.0, 3.0, 4.0]
    assert not parsed.malformed


def test_commands_run_end_to_end_through_the_host_target(
    fw: GenericFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    tmp_path: Path,
) -> None:
    data = tmp_path / "numbers.txt"
    data.write_text("2.5\n3.5\n")
    bench = tmp_path / "bench.py"
    # A "native binary" that reads its model file and prints metric lines on stderr.
    bench.write_text(
        "import json, sys\n"
        "for line in open(sys.argv[1]):\n"
        "    payload = {'type': 'NET', 'metric': 'latency', 'unit': 'ms', 'value': float(line)}\n"
        "    print('PyTorchObserver ' + json.dumps(payload), file=sys.stderr)\n"
    )
    model = make_model({"model": "numbers.txt"}, format="custom")
    ctx = make_ctx(
        model, CONFIG, files={"files.model": str(data)}, workdir=str(tmp_path),
        commands=("{PYTHON} {TGTDIR}/bench.py {files.model}",),
    )
    host = HostTarget()
    results = [
        host.run(RunRequest(i.argv, env=i.env, cwd=ctx.workdir, timeout=60))
        for i in fw.invocations(ctx)
    ]
    assert all(r.ok for r in results), results[0].stderr
    assert [s.value for s in fw.parse(results).samples] == [2.5, 3.5]
