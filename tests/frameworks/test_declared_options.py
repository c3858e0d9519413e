"""Every framework declares the options it takes (``benchlab.frameworks.options``): a key it
does not declare, or a value it does not allow, is refused while the sweep is parsed or
planned, before anything runs; ``benchlab frameworks`` lists the declarations; tables label
options from them. Plan-level only: no runtime, no export, no job."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import benchlab
from benchlab.cli.commands import app
from benchlab.errors import PluginLoadError, SpecError, UsageError
from benchlab.frameworks.options import (
    FrameworkOption,
    declaration_problems,
    declared_options,
    option_problem,
)
from benchlab.plugins import check_configurations, framework_options
from benchlab.harness.planner import plan
from benchlab.harness.sweep import framework_configs
from benchlab.plugins import FRAMEWORK_GROUP, available_names, load_framework
from benchlab.report.matrix import config_label
from benchlab.spec import load_spec
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.host import HostTarget

BUILT_IN = ("executorch", "generic", "llamacpp", "onnxruntime", "openvino", "ortgenai",
            "ovgenai", "pytorch", "tflite")


def test_every_built_in_framework_is_covered_here() -> None:
    assert set(BUILT_IN) <= set(available_names(FRAMEWORK_GROUP))


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_built_in_framework_declares_its_options_well(name: str) -> None:
    framework = load_framework(name)
    declared = declared_options(framework)
    assert declared is not None, f"{name} declares no options"
    assert declaration_problems(declared) == []
    keys = {option.name for option in declared}
    # What the adapter itself reads or adds must be declared, or the check would refuse it.
    assert set(getattr(framework, "generative_options", ())) <= keys
    assert option_problem(name, declared, getattr(framework, "shared_process_options", {})) \
        is None
    for precision in getattr(framework, "generative_precisions", {}):
        assert option_problem(name, declared, {"precision": precision}) is None


def _misspelt(name: str) -> tuple[str, str]:
    """A declared key of ``name`` and that key with its last letter dropped."""
    key = next(o.name for o in declared_options(load_framework(name)) or () if len(o.name) > 3)
    return key, key[:-1]


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_misspelt_option_is_refused_while_parsing_naming_the_nearest_key(name: str) -> None:
    key, typo = _misspelt(name)
    with pytest.raises(UsageError) as info:
        framework_configs([f"{name}:{typo}=1"])
    message = str(info.value)
    assert f"{name} takes no option {typo!r}" in message
    assert f"did you mean {key}?" in message
    for known in declared_options(load_framework(name)) or ():
        assert known.name in message  # the keys it does take


@pytest.mark.parametrize(("text", "meant"), [
    ("onnxruntime:provders=CUDAExecutionProvider", "providers"),
    ("executorch:delegat=xnnpack", "delegate"),
    ("tflite:xnnpak=false", "xnnpack"),
])
def test_the_typos_of_the_issue_are_refused_before_any_export(text: str, meant: str) -> None:
    # plan_sweep builds the sweep first: the zoo model is never exported, no job planned.
    with pytest.raises(UsageError, match=f"did you mean {meant}\\?"):
        benchlab.plan_sweep(models=["mlp"], frameworks=[text])


def test_generic_takes_only_the_libraries_its_commands_load() -> None:
    with pytest.raises(UsageError, match="generic takes no option 'variant'; it takes libs"):
        framework_configs(["generic:variant=a"])
    assert option_problem("bare", (), {"variant": "a"}).message == \
        "bare takes no options, and was given 'variant'"


@pytest.mark.parametrize(("text", "why"), [
    ("tflite:xnnpack=maybe", "tflite option xnnpack must be true or false, not 'maybe'"),
    ("onnxruntime:graph_optimization_level=max",
     "must be one of disable, basic, extended, all, not 'max'"),
    ("openvino:streams=0", "openvino option streams must be an integer >= 1 or auto, not 0"),
    ("llamacpp:poll=101", "must be an integer from 0 to 100 or none, not 101"),
    ("pytorch:mode=jit", "pytorch option mode must be one of eager, torchscript"),
    ("ortgenai:threads=two", "ortgenai option threads must be an integer >= 1, not 'two'"),
])
def test_a_bad_value_for_a_declared_option_is_refused(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=why.replace("(", r"\(").replace(")", r"\)")):
        framework_configs([text])


def test_good_values_pass_as_given() -> None:
    configs = framework_configs([
        "onnxruntime:providers=CPUExecutionProvider+AzureExecutionProvider,threads=2",
        "openvino:streams=auto,hint=throughput", "llamacpp:poll=none,flash_attn=true",
        "tflite:binary=./benchmark_model,flags=--use_gpu=true,file=2"])
    assert [dict(c.options) for c in configs][2] == {"poll": "none", "flash_attn": True}
    check_configurations([FrameworkConfig("onnxruntime", {"providers": ["CPUExecutionProvider"]})])


def test_a_compare_side_is_checked_too() -> None:
    from benchlab.ab.sides import make_side

    with pytest.raises(UsageError, match="did you mean mode"):
        make_side("control", config="pytorch:mdoe=eager")


def test_a_spec_files_option_is_a_spec_error_naming_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "net.json"
    path.write_text(json.dumps({
        "model": {"name": "net", "format": "onnx", "files": {"model": {
            "location": "net.onnx", "sha256": "0" * 64}}},
        "tests": [{"identifier": "t"}],
        "frameworks": [{"name": "onnxruntime", "precision": "int8"},
                       {"name": "onnxruntime", "provders": "CUDAExecutionProvider"}]}))
    spec = load_spec(path)  # loading reads the file; the options are the planner's to judge
    with pytest.raises(SpecError) as info:
        plan([spec], HostTarget(), device="here")
    assert info.value.path == path and info.value.field == "frameworks[1].provders"
    assert str(info.value).startswith(f"{path}: frameworks[1].provders: onnxruntime takes no "
                                      "option 'provders' (did you mean providers?)")


# -- labels -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("framework", "config", "label"), [
    ("executorch", {"delegate": "xnnpack", "precision": "int8"}, "executorch[xnnpack,int8]"),
    ("onnxruntime", {"precision": "int8", "threads": 4}, "onnxruntime[int8,threads=4]"),
    ("pytorch", {"mode": "eager", "threads": 4}, "pytorch[eager,threads=4]"),
    ("tflite", {"xnnpack": False}, "tflite[xnnpack=false]"),
    ("openvino", {"precision": "f32", "hint": "throughput"}, "openvino[f32,hint=throughput]"),
    ("llamacpp", {"cache_type": "q8_0", "precision": "q8_0"}, "llamacpp[q8_0,cache_type=q8_0]"),
    ("onnxruntime", {"providers": ["A", "B"]}, "onnxruntime[providers=A+B]"),
    # Never a value alone: a key nothing declares (a stored typo), a framework not installed.
    ("onnxruntime", {"provider": "cpu"}, "onnxruntime[provider=cpu]"),
    ("nosuchfw", {"precision": "int8"}, "nosuchfw[precision=int8]"),
    ("pytorch", {}, "pytorch"),
])
def test_a_label_shows_key_value_unless_the_option_is_declared_bare_bare_values_first(
        framework: str, config: dict, label: str) -> None:
    assert config_label(framework, config) == label


def test_a_bare_option_needs_choices_no_other_bare_option_shares() -> None:
    precision = FrameworkOption("precision", str, "p", choices=("fp32", "q8_0"), bare=True)
    cache = FrameworkOption("cache_type", str, "c", choices=("f16", "q8_0"), bare=True)
    assert declaration_problems([precision, cache]) == [
        "bare options 'precision' and 'cache_type' share the value 'q8_0'"]
    assert declaration_problems([FrameworkOption("x", str, "x", bare=True)]) == [
        "'x' is bare but has no choices"]
    assert declaration_problems([precision, precision]) == ["'precision' is declared twice"]
    assert declaration_problems([FrameworkOption("n", int, "n", default=0, minimum=1)]) == [
        "'n''s default must be an integer >= 1, not 0"]


# -- benchlab frameworks ----------------------------------------------------------------------


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.output


def test_benchlab_frameworks_lists_every_framework_from_its_declaration() -> None:
    out = _cli("frameworks")
    for name in BUILT_IN:
        assert name in out
    assert "shared libraries the native program loads" in out
    row = next(line for line in out.splitlines() if "graph_optimization_level" in line)
    assert "text" in row and "all" in row and "disable, basic, extended, all" in row
    assert "precision (bare)" in out
    assert [listed.framework for listed in benchlab.framework_options(["tflite"])] == ["tflite"]


# -- a plug-in's own declaration --------------------------------------------------------------


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An installed distribution registering a framework that declares its options, one that
    declares none and one whose declaration is malformed."""
    (tmp_path / "declaring_plugin.py").write_text(textwrap.dedent(
        """
        from benchlab.frameworks.generic import GenericFramework
        from benchlab.frameworks.options import FrameworkOption, THREADS

        class Declaring(GenericFramework):
            name = "declaringfw"
            declared_options = (
                FrameworkOption("speed", int, "how fast", default=1, minimum=1),
                FrameworkOption("flavour", str, "which flavour", default="plain",
                                choices=("plain", "spicy"), bare=True),
                THREADS,
            )

        class Silent:
            name = "silentfw"

            def availability(self):
                from benchlab.targets.base import Availability
                return Availability(ok=True)

            def configurations(self, model, requested):
                return list(requested)

            def invocations(self, ctx):
                return []

            def parse(self, results):
                raise NotImplementedError

        class Malformed(GenericFramework):
            name = "malformedfw"
            declared_options = (FrameworkOption("flavour", str, "which flavour", bare=True),)
        """
    ))
    dist = tmp_path / "benchlab_declaring-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: benchlab-declaring\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[benchlab.frameworks]\ndeclaringfw = declaring_plugin:Declaring\n"
        "silentfw = declaring_plugin:Silent\nmalformedfw = declaring_plugin:Malformed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("declaring_plugin", None)


def test_a_plugins_declared_options_are_checked_like_a_built_ins(plugins: None) -> None:
    with pytest.raises(UsageError, match=r"declaringfw takes no option 'sped' \(did you mean "
                                         r"speed\?\); it takes flavour, speed, threads"):
        framework_configs(["declaringfw:sped=2"])
    with pytest.raises(UsageError, match="declaringfw option flavour must be one of plain, "
                                         "spicy, not 'sweet'"):
        framework_configs(["declaringfw:flavour=sweet"])
    assert framework_configs(["declaringfw:flavour=spicy,speed=2"])
    assert config_label("declaringfw", {"flavour": "spicy", "speed": 2}) == \
        "declaringfw[spicy,speed=2]"


def test_a_plugin_that_declares_nothing_passes_its_options_unchecked(plugins: None) -> None:
    (config,) = framework_configs(["silentfw:anything=1"])
    assert dict(config.options) == {"anything": 1}
    assert config_label("silentfw", {"anything": 1}) == "silentfw[anything=1]"
    [listed] = framework_options(["silentfw"])
    assert listed.options is None
    assert "silentfw declares no options: whatever it is given passes to it unchecked" in \
        _cli("frameworks", "silentfw")


def test_a_malformed_declaration_is_the_plugins_fault(plugins: None) -> None:
    with pytest.raises(PluginLoadError, match="'flavour' is bare but has no choices"):
        framework_options(["malformedfw"])
    with pytest.raises(PluginLoadError, match="malformedfw"):  # never unchecked instead
        framework_configs(["malformedfw:flavour=x"])
    assert config_label("malformedfw", {"flavour": "x"}) == "malformedfw[flavour=x]"
    listed = {entry.framework: entry for entry in framework_options()}
    assert "bare but has no choices" in (listed["malformedfw"].error or "")
    assert [o.name for o in listed["declaringfw"].options or ()] == ["speed", "flavour",
                                                                    "threads"]
    out = _cli("frameworks", "declaringfw")
    assert "speed" in out and "how fast" in out and "plain, spicy" in out
