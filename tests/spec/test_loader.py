"""Loading specs and suites: formats, expansion, defaults, and errors that name file and field."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from benchlab.errors import SpecError
from benchlab.spec import load, load_spec, load_suite
from benchlab.spec.types import FileRef, InputDef

DATA = Path(__file__).parent / "data"
SQUEEZENET = DATA / "faipep" / "models" / "squeezenet" / "squeezenet.json"


def write(tmp_path: Path, data: Any, name: str = "spec.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def minimal(**test: Any) -> dict[str, Any]:
    return {
        "model": {"name": "m", "format": "generic"},
        "tests": [{"identifier": "t", "commands": ["true"], **test}],
    }


def spec_error(path: Path, **kwargs: Any) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_spec(path, **kwargs)
    return info.value


# -- FAI-PEP specs --------------------------------------------------------------------------


def test_faipep_spec_loads_unchanged_and_is_not_rewritten() -> None:
    before = hashlib.sha256(SQUEEZENET.read_bytes()).hexdigest()
    spec = load_spec(SQUEEZENET)
    assert hashlib.sha256(SQUEEZENET.read_bytes()).hexdigest() == before
    assert spec.model.name == "squeezenet"
    assert spec.model.format == "caffe2"
    assert spec.model.files["predict"] == FileRef(
        key="predict",
        location="https://example.org/models/squeezenet/predict_net.pb",
        base_dir=SQUEEZENET.parent.absolute(),
        md5="694bfdd02e9ccb57bfc4acb451fbfb2d",
        filename="predict_net.pb",
    )
    assert spec.model.placeholders == {"category": "CNN", "kind": "deployment"}
    assert spec.path == SQUEEZENET.absolute()


def test_faipep_shapes_expand_to_one_case_each_and_id_is_the_file_index() -> None:
    tests = load_spec(SQUEEZENET).tests
    assert [t.identifier for t in tests] == ["0[1x3x224x224]", "0[4x3x224x224]", "1"]
    assert tests[0].inputs == (InputDef("data", (1, 3, 224, 224), "float32"),)
    assert tests[1].inputs == (InputDef("data", (4, 3, 224, 224), "float32"),)
    assert tests[0].commands == tests[1].commands
    assert "{files.predict}" in tests[0].commands[0]


def test_faipep_platform_args_and_model_defaults_are_mapped() -> None:
    first, _, second = load_spec(SQUEEZENET).tests
    assert first.timeout == 300.0
    assert first.cooldown == 5.0  # sleep_before_run beats the model-level cooldown
    assert first.cpu_list == "0-3"  # the test's own cpu-list beats the taskset mask
    assert first.env == {"OMP_NUM_THREADS": "4"}
    assert first.statistics == ("mean", "p95")
    assert second.cooldown == 2.0  # model-level cooldown
    assert second.timeout == 600.0


def test_faipep_legacy_command_and_file_list_forms() -> None:
    test = load_spec(SQUEEZENET).tests[2]
    assert test.commands == (
        "{program} --net {files.predict} --init_net {files.init} --input_file {input_files.data}",
    )
    assert test.input_files["data"].location == "tests/test0/data.txt"
    assert test.input_files["data"].md5 == "93015ae541c3c9b84c2bb97de9252ad9"
    assert test.placeholders == {"net_name": "squeezenet_v1"}
    assert (test.warmup, test.iter) == (0, 1)


def test_faipep_benchmark_list_merges_meta_into_every_model() -> None:
    suite = load_suite(DATA / "faipep" / "benchmarks" / "cnn.json")
    (spec,) = suite.specs
    assert spec.path == SQUEEZENET.absolute()
    assert spec.model.placeholders["group"] == "CNN"
    # meta's timeout became the model-level default; platform_args still win where given.
    assert [t.timeout for t in spec.tests] == [300.0, 300.0, 120.0]


# -- benchlab YAML and JSON -----------------------------------------------------------------


def test_yaml_spec_with_every_setting() -> None:
    spec = load_spec(DATA / "resnet.yaml")
    (test,) = spec.tests
    assert spec.model.framework == "onnxruntime"
    assert spec.model.placeholders == {"opset": "17"}
    assert spec.model.files["model"].sha256 == "0123456789abcdef" * 4
    assert test.identifier == "latency"  # one shape: no suffix
    assert (test.warmup, test.iter, test.repeat) == (5, 100, 3)
    assert (test.min_time, test.max_time) == (1.0, 30.0)
    assert test.statistics == ("p50", "p99.9", "stdev")
    assert (test.threads, test.cpu_list, test.profile_ops) == (4, "0-1,3", True)
    assert test.target_ci == pytest.approx(0.02)
    assert [(f.name, dict(f.options)) for f in spec.frameworks] == [
        ("onnxruntime", {"provider": "cpu"}),
        ("onnxruntime", {"provider": "cuda"}),
    ]


def test_statistic_names_are_normalised(tmp_path: Path) -> None:
    (test,) = load_spec(write(tmp_path, minimal(statistics=["MAD", " P95 "]))).tests
    assert test.statistics == ("mad", "p95")


def test_defaults_apply_when_keys_are_absent(tmp_path: Path) -> None:
    (test,) = load_spec(write(tmp_path, minimal())).tests
    assert (test.metric, test.warmup, test.iter, test.repeat) == ("delay", 1, 10, 1)
    assert (test.timeout, test.cooldown, test.target_ci, test.memory_limit) == (600, 0, None, None)


def test_unknown_extension_falls_back_to_json_then_yaml(tmp_path: Path) -> None:
    as_json = write(tmp_path, minimal(), "a.spec")
    as_yaml = write(tmp_path, "model: {name: y, format: generic}\ntests: [{identifier: t}]\n",
                    "b.spec")
    assert load_spec(as_json).model.name == "m"
    assert load_spec(as_yaml).model.name == "y"


def test_several_inputs_expand_together(tmp_path: Path) -> None:
    inputs = {
        "a": {"shapes": [[1, 2], [3, 4]]},
        "b": {"shapes": [[5], [6]], "type": "int64"},
    }
    tests = load_spec(write(tmp_path, minimal(inputs=inputs))).tests
    assert [t.identifier for t in tests] == ["t[1x2,5]", "t[3x4,6]"]
    assert tests[1].inputs == (InputDef("a", (3, 4)), InputDef("b", (6,), "int64"))


def test_suite_defaults_fill_in_but_the_spec_wins() -> None:
    suite = load_suite(DATA / "suite" / "suite.yaml")
    resnet, tiny = suite.specs
    assert resnet.model.placeholders["group"] == "vision"
    assert resnet.tests[0].warmup == 5  # the spec's own value
    assert resnet.tests[0].timeout == 99.0  # suite test default
    assert resnet.tests[0].env == {"SUITE_VAR": "1", "ORT_LOGGING": "0"}
    assert [f.name for f in resnet.frameworks] == ["onnxruntime", "onnxruntime"]
    assert tiny.tests[0].warmup == 2
    assert tiny.tests[0].timeout == 50.0  # the spec's model-level timeout beats the suite
    assert tiny.tests[0].placeholders == {"owner": "lab"}
    assert [f.name for f in tiny.frameworks] == ["generic"]


def test_load_spec_takes_defaults_directly(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(iter=7))
    spec = load_spec(path, defaults={"test": {"iter": 3, "repeat": 4}, "model": {"kind": "x"}})
    assert (spec.tests[0].iter, spec.tests[0].repeat) == (7, 4)
    assert spec.model.placeholders == {"kind": "x"}
    error = spec_error(path, defaults={"test": {"repeat": 0}})
    assert error.field == "defaults.test.repeat"


def test_load_detects_spec_or_suite(tmp_path: Path) -> None:
    assert [s.model.name for s in load(SQUEEZENET)] == ["squeezenet"]
    assert [s.model.name for s in load(DATA / "suite" / "suite.yaml")] == ["resnet18", "tiny"]
    with pytest.raises(SpecError, match="neither a spec"):
        load(write(tmp_path, {"name": "x"}))


def test_root_relative_paths(tmp_path: Path) -> None:
    write(tmp_path, minimal())
    suite = write(tmp_path, "benchmarks: ['//spec.json']\n", "suite.yaml")
    assert load_spec("//spec.json", root_dir=tmp_path).model.name == "m"
    assert len(load_suite(suite, root_dir=tmp_path).specs) == 1
    with pytest.raises(SpecError, match="no root dir"):
        load_spec("//spec.json")


def test_root_relative_file_locations_are_kept_as_written(tmp_path: Path) -> None:
    data = minimal()
    data["model"]["files"] = {"w": {"location": "//weights/w.bin", "md5": None}}
    assert load_spec(write(tmp_path, data)).model.files["w"].location == "//weights/w.bin"


# -- errors ---------------------------------------------------------------------------------


def test_negative_warmup_names_the_field() -> None:
    error = spec_error(DATA / "bad" / "negative_warmup.json")
    assert error.path == DATA / "bad" / "negative_warmup.json"
    assert error.field == "tests[0].warmup"
    assert "negative_warmup.json: tests[0].warmup:" in str(error)


def test_typo_key_suggests_the_known_one() -> None:
    error = spec_error(DATA / "bad" / "typo.yaml")
    assert error.field == "tests[0].itr"
    assert "did you mean 'iter'" in error.problem


def test_unknown_top_level_and_model_keys(tmp_path: Path) -> None:
    data = minimal()
    data["test"] = []
    assert "did you mean 'tests'" in spec_error(write(tmp_path, data)).problem
    data = minimal()
    data["model"]["fles"] = {}
    error = spec_error(write(tmp_path, data))
    assert (error.field, "did you mean 'files'" in error.problem) == ("model.fles", True)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("broken.json", None, "invalid JSON at line 4, column 1"),
        ("broken.yaml", None, "invalid YAML at line 3, column 10"),
        ("empty.json", "  \n", "the file is empty"),
        ("list.yaml", "- 1\n- 2\n", "expected a mapping at the top level, got list"),
        ("binary.json", b"\xff\xfe\x00", "not UTF-8"),
        ("missing.json", None, "file not found"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, text: Any, expected: str) -> None:
    path = DATA / "bad" / name
    if isinstance(text, str):
        path = write(tmp_path, text, name)
    elif isinstance(text, bytes):
        path = tmp_path / name
        path.write_bytes(text)
    error = spec_error(path)
    assert expected in error.problem
    assert error.path == path


def test_directory_is_a_spec_error(tmp_path: Path) -> None:
    assert "cannot read" in spec_error(tmp_path).problem


@pytest.mark.parametrize(
    ("test", "field", "fragment"),
    [
        ({"iter": 0}, "tests[0].iter", "greater than or equal to 1"),
        ({"repeat": "many"}, "tests[0].repeat", "valid integer"),
        ({"statistics": ["p101"]}, "tests[0].statistics[0]", "outside p0..p100"),
        ({"statistics": ["meen"]}, "tests[0].statistics[0]", "did you mean 'mean'"),
        ({"cpu_list": "0-x"}, "tests[0].cpu_list", "not a CPU list"),
        ({"cpu-list": "3-1"}, "tests[0].cpu-list", "runs backwards"),
        ({"target_ci": "abc%"}, "tests[0].target_ci", "not a percentage"),
        ({"target_ci": 1.5}, "tests[0].target_ci", "less than 1"),
        ({"platform_args": {"taskset": "zz"}}, "tests[0].platform_args.taskset", "hex CPU"),
        ({"command": "x"}, "tests[0]", "only one of commands, command"),
        ({"min_time": 5, "max_time": 1}, "tests[0]", "below min_time"),
        ({"inputs": {"a": {"shapes": [[1]]}, "b": {"shapes": [[1], [2]]}}},
         "tests[0].inputs.b.shapes", "has 2 shapes but inputs.a has 1"),
        ({"inputs": {"a": {"shapes": [[-1]]}}}, "tests[0].inputs.a.shapes[0][0]", "greater"),
        ({"identifier": ""}, "tests[0].identifier", "at least 1 character"),
    ],
)
def test_bad_test_values(tmp_path: Path, test: dict[str, Any], field: str, fragment: str) -> None:
    error = spec_error(write(tmp_path, minimal(**test)))
    assert error.field == field
    assert fragment in error.problem


@pytest.mark.parametrize(
    ("files", "field", "fragment"),
    [
        ({"w": {"location": "https://x/w.bin"}}, "model.files.w", 'needs "sha256" or "md5"'),
        ({"w": {"location": "https://x/w.bin", "md5": None}}, "model.files.w", "downloaded"),
        ({"w": {"location": "w.bin", "md5": "abc"}}, "model.files.w.md5", "pattern"),
        ({"w": [{"location": "a", "md5": None}, {"location": "b", "md5": None}]},
         "model.files.w", "exactly one entry"),
    ],
)
def test_bad_file_entries(tmp_path: Path, files: Any, field: str, fragment: str) -> None:
    data = minimal()
    data["model"]["files"] = files
    error = spec_error(write(tmp_path, data))
    assert (error.field, fragment in error.problem) == (field, True)


def test_local_file_may_opt_out_of_hashing(tmp_path: Path) -> None:
    data = minimal()
    data["model"]["files"] = {"w": {"location": "w.bin", "md5": None}}
    ref = load_spec(write(tmp_path, data)).model.files["w"]
    assert (ref.md5, ref.sha256, ref.base_dir) == (None, None, tmp_path.absolute())


def test_all_problems_are_reported_together(tmp_path: Path) -> None:
    data = {"model": {"format": "onnx"}, "tests": [{"identifier": "a", "warmup": -1},
                                                   {"identifier": "b", "itr": 3}]}
    error = spec_error(write(tmp_path, data))
    lines = str(error).splitlines()
    assert error.field == "model.name"
    assert error.problem == "missing required key 'name'"
    assert len(lines) == 3
    assert any("tests[0].warmup" in line for line in lines)
    assert any("tests[1].itr" in line and "'iter'" in line for line in lines)


def test_duplicate_identifiers_after_expansion(tmp_path: Path) -> None:
    data = minimal()
    data["tests"].append({"identifier": "t", "commands": ["true"]})
    error = spec_error(write(tmp_path, data))
    assert error.field == "tests[1].identifier"
    assert "also tests[0]" in error.problem


def test_missing_tests_and_wrong_types(tmp_path: Path) -> None:
    error = spec_error(write(tmp_path, {"model": {"name": "m", "format": "x"}}))
    assert (error.field, error.problem) == ("tests", "missing required key 'tests'")
    error = spec_error(write(tmp_path, {"model": "m", "tests": [{"identifier": "t"}]}))
    assert error.field == "model"


def test_suite_errors_name_the_suite_and_entry(tmp_path: Path) -> None:
    suite = write(tmp_path, "specs: [a.json, 'x/*.json']\n", "suite.yaml")
    write(tmp_path, minimal(), "a.json")
    with pytest.raises(SpecError) as info:
        load_suite(suite)
    assert (info.value.path, info.value.field) == (suite, "specs[1]")
    assert "matches no file" in info.value.problem
    suite = write(tmp_path, "specs: [nope.json]\n", "suite.yaml")
    with pytest.raises(SpecError, match="no such spec file"):
        load_suite(suite)
    with pytest.raises(SpecError, match='exactly one of "specs" and "benchmarks"'):
        load_suite(write(tmp_path, "specs: [a.json]\nbenchmarks: [a.json]\n", "suite.yaml"))
    with pytest.raises(SpecError) as info:
        load_suite(write(tmp_path, "specs: [a.json]\ndefaults: {test: {wramup: 1}}\n", "s.yaml"))
    assert info.value.field == "defaults.test.wramup"
    assert "did you mean 'warmup'" in info.value.problem


def test_suite_cannot_list_a_suite(tmp_path: Path) -> None:
    write(tmp_path, minimal(), "a.json")
    write(tmp_path, "specs: [a.json]\n", "inner.yaml")
    outer = write(tmp_path, "specs: [inner.yaml]\n", "outer.yaml")
    with pytest.raises(SpecError, match="a suite cannot list suites"):
        load_suite(outer)


def test_errors_in_a_listed_spec_name_that_spec(tmp_path: Path) -> None:
    bad = write(tmp_path, minimal(warmup=-1), "bad.json")
    suite = write(tmp_path, "specs: [bad.json]\n", "suite.yaml")
    with pytest.raises(SpecError) as info:
        load_suite(suite)
    assert (info.value.path, info.value.field) == (bad, "tests[0].warmup")


def test_entry_file_is_resolved_against_the_spec_directory(tmp_path: Path) -> None:
    data = minimal()
    data["model"]["entry"] = "nets/build.py:make"
    spec = load_spec(write(tmp_path, data))
    assert spec.model.entry == f"{(tmp_path / 'nets' / 'build.py').resolve()}:make"
    data["model"]["entry"] = "benchlab.zoo.models:mlp"  # a module path stays as written
    assert load_spec(write(tmp_path, data)).model.entry == "benchlab.zoo.models:mlp"


def test_a_single_command_string_is_one_command(tmp_path: Path) -> None:
    spec = minimal()
    spec["tests"][0]["commands"] = "echo {warmup}"
    (test,) = load_spec(write(tmp_path, spec)).tests
    assert test.commands == ("echo {warmup}",)
