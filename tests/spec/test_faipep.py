"""FAI-PEP compatibility mappings."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from benchlab.schema.settings import EnergySettings
from benchlab.spec import load, load_spec
from benchlab.spec.faipep import cpu_ranges, normalise_dtype, taskset_to_cpu_list


@pytest.mark.parametrize(
    ("mask", "cpus"),
    [("3", "0-1"), ("f0", "4-7"), ("0x5", "0,2"), ("c", "2-3"), ("0F", "0-3"), ("81", "0,7")],
)
def test_taskset_mask_becomes_cpu_list(mask: str, cpus: str) -> None:
    assert taskset_to_cpu_list(mask) == cpus


@pytest.mark.parametrize("mask", ["", "0", "g1", "-1"])
def test_bad_taskset_masks(mask: str) -> None:
    with pytest.raises(ValueError):
        taskset_to_cpu_list(mask)


def test_cpu_ranges_compacts_runs() -> None:
    assert cpu_ranges([5, 0, 1, 2, 2, 9, 10]) == "0-2,5,9-10"
    assert cpu_ranges([]) == ""


def test_c_style_dtypes_are_translated() -> None:
    assert [normalise_dtype(t) for t in ("float", "long", "int8")] == ["float32", "int64", "int8"]


def load_test(tmp_path: Path, model: dict[str, Any] | None = None, **test: Any) -> Any:
    data = {
        "model": {"name": "m", "format": "generic", **(model or {})},
        "tests": [{"identifier": "t", **test}],
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    return load_spec(path).tests[0]


def test_platform_args_map_to_settings(tmp_path: Path) -> None:
    test = load_test(
        tmp_path,
        platform_args={"taskset": "0c", "sleep_before_run": 3, "timeout": 40,
                       "env": {"A": "1"}, "power": False},
        env={"B": "2"},
    )
    assert (test.cpu_list, test.cooldown, test.timeout) == ("2-3", 3.0, 40.0)
    assert test.env == {"A": "1", "B": "2"}


def test_own_keys_beat_platform_args_which_beat_the_model(tmp_path: Path) -> None:
    test = load_test(
        tmp_path,
        model={"timeout": 5, "cooldown": 1, "repeat": 3},
        platform_args={"timeout": 40, "env": {"A": "platform"}},
        timeout=7,
        env={"A": "own"},
    )
    assert (test.timeout, test.cooldown, test.repeat) == (7.0, 1.0, 3)
    assert test.env == {"A": "own"}


def test_legacy_arguments_run_the_program(tmp_path: Path) -> None:
    test = load_test(tmp_path, arguments="--net {files.predict}")
    assert test.commands == ("{program} --net {files.predict}",)


def test_ignored_model_and_test_keys_are_accepted(tmp_path: Path) -> None:
    model = {
        "kind": "deployment", "category": "CNN", "group": "g", "libraries": {}, "converter": {},
        "preprocess": {}, "postprocess": {}, "command_args": "x", "platform_args": {}, "app": {},
    }  # fmt: skip
    test = load_test(
        tmp_path, model=model, output_files={}, files={}, preprocess={}, postprocess={},
        profiler={"enabled": True}, degrade={}, method="x", monsoon={},
    )  # fmt: skip
    assert test.identifier == "t"


def test_a_suites_command_args_reach_the_commands_that_run_the_program(tmp_path: Path) -> None:
    # benchmarks/caffe2/cnn-mkl.json: meta.command_args "--backend mkl" for five models.
    (tmp_path / "m.json").write_text(json.dumps({
        "model": {"name": "m", "format": "caffe2"},
        "tests": [{"identifier": "t", "commands": ["{program} --iter {iter}", "echo done"]}],
    }))
    (tmp_path / "suite.json").write_text(json.dumps(
        {"meta": {"command_args": "--backend mkl"}, "benchmarks": ["m.json"]}))
    (spec,) = load(tmp_path / "suite.json")
    assert spec.tests[0].commands == ("{program} --iter {iter} --backend mkl", "echo done")
    assert spec.ignored == ()
    (alone,) = load(tmp_path / "m.json")
    assert alone.tests[0].commands == ("{program} --iter {iter}", "echo done")


def _load(tmp_path: Path, data: dict[str, Any], text: str | None = None) -> Any:
    path = tmp_path / "spec.json"
    path.write_text(text if text is not None else json.dumps(data))
    return load_spec(path)


def test_power_fields_become_the_tests_energy_request(tmp_path: Path) -> None:
    # The form of FAI-PEP's *_power.json specs: a Monsoon collection time and voltage
    # (every form: tests/spec/test_faipep_power.py).
    spec = _load(tmp_path, {
        "model": {"name": "squeezenet_power", "format": "caffe2", "kind": "deployment"},
        "tests": [{"identifier": "p", "commands": ["{program} --iter {iter}"], "iter": 1000,
                   "metric": "power", "collection_time": 180, "voltage": 4.2}],
    })
    assert spec.tests[0].metric == "power"
    assert spec.tests[0].energy == EnergySettings("monsoon", voltage=4.2, collection_time=180)
    assert spec.ignored == ()


def test_accuracy_fields_load_numbers_as_placeholders_and_files_made_at_run_time(
    tmp_path: Path
) -> None:
    # The form of FAI-PEP's *_accuracy_imagenet.json specs.
    spec = _load(tmp_path, {
        "model": {"name": "shufflenet", "format": "caffe2", "total_images": 50000,
                  "repeat": 1000, "images_per_iter": "{total_images}/{repeat}",
                  "files": {"predict": {"location": "{MODEL_DIR}/model.pb", "md5": ""}},
                  "preprocess": {"commands": ["mkdir -p {HOSTDIR}/inputs"]},
                  "postprocess": {"commands": ["aggregate --limit {repeat}"]}},
        "tests": [{"identifier": "{ID}", "metric": "accuracy", "commands": ["{program}"],
                   "input_files": {"images_tensor": {"location": "{HOSTDIR}/images.pb"}},
                   "output_files": {"softmax": {"location": "{TGTDIR}/softmax.txt"}},
                   "preprocess": {"commands": ["convert {INDEX}"]},
                   "postprocess": {"commands": ["compare {INDEX}"]}}],
    })
    assert spec.model.placeholders["total_images"] == "50000"
    assert spec.model.files["predict"].md5 is None
    assert spec.tests[0].input_files["images_tensor"].location == "{HOSTDIR}/images.pb"
    # The accuracy flow is acted on now (benchlab.harness.hoststeps): nothing of it is listed.
    assert spec.ignored == ()
    assert spec.model.preprocess == ("mkdir -p {HOSTDIR}/inputs",)
    assert spec.model.postprocess == ("aggregate --limit {repeat}",)
    test = spec.tests[0]
    assert (test.preprocess, test.postprocess) == (("convert {INDEX}",), ("compare {INDEX}",))
    assert test.output_files["softmax"].location == "{TGTDIR}/softmax.txt"
    assert test.output_files["softmax"].filename == "softmax.txt"


def test_accuracy_flow_keys_benchlab_does_not_act_on_are_listed(tmp_path: Path) -> None:
    spec = _load(tmp_path, {
        "model": {"name": "m", "format": "caffe2",
                  "postprocess": {"commands": ["x"], "platform_args": {"timeout": 5}}},
        "tests": [{"identifier": "t", "commands": ["{program}"],
                   "preprocess": {"command": "prep {INDEX}", "files": {}},
                   "output_files": {"out": [{"filename": "o.txt", "location": "x/o.txt",
                                             "md5": "a0340f00ea3e012e8aad8b96caee6c9f"}],
                                    "log": {"location": "{TGTDIR}/log.txt",
                                            "converter": {"name": "json"}}}}],
    })
    ignored = dict(spec.ignored)
    assert set(ignored) == {"model.postprocess.platform_args", "tests[0].preprocess.files",
                            "tests[0].output_files.out.md5", "tests[0].output_files.log.converter"}
    assert "metric lines" in ignored["tests[0].output_files.log.converter"]
    test = spec.tests[0]
    assert test.preprocess == ("prep {INDEX}",)
    assert {k: o.filename for k, o in test.output_files.items()} == {"out": "o.txt",
                                                                     "log": "log.txt"}


@pytest.mark.parametrize(("output_files", "problem"), [
    ({"a": {"location": "{TGTDIR}/x.txt"}, "b": {"location": "sub/x.txt"}},
     "would overwrite output_files.a's"),
    ({"a": {"location": "{TGTDIR}/x.txt", "filename": "../x.txt"}}, "plain file name"),
    ({"a": {"location": "{TGTDIR}/"}}, "plain file name, not ''"),
])
def test_bad_output_files_are_spec_errors(
    tmp_path: Path, output_files: dict[str, Any], problem: str
) -> None:
    from benchlab.errors import SpecError

    with pytest.raises(SpecError, match=re.escape(problem)):
        _load(tmp_path, {"model": {"name": "m", "format": "generic"},
                         "tests": [{"identifier": "t", "output_files": output_files}]})


def test_a_step_gives_commands_or_command_not_both(tmp_path: Path) -> None:
    from benchlab.errors import SpecError

    with pytest.raises(SpecError, match=r"model\.preprocess: .*only one of commands, command"):
        _load(tmp_path, {"model": {"name": "m", "format": "generic",
                                   "preprocess": {"commands": ["a"], "command": "b"}},
                         "tests": [{"identifier": "t"}]})


def test_a_downloaded_file_still_needs_its_hash(tmp_path: Path) -> None:
    from benchlab.errors import SpecError

    with pytest.raises(SpecError, match="downloaded file needs a sha256 or md5"):
        _load(tmp_path, {"model": {"name": "m", "format": "tflite", "files": {
            "graph": {"location": "https://example.org/m.tflite", "md5": ""}}},
            "tests": [{"identifier": "t"}]})


def test_commands_written_twice_keep_the_last_and_it_is_listed(tmp_path: Path) -> None:
    # FAI-PEP's tflite mobilenet_v2_1.4_224.json repeats "commands"; JSON keeps the mapping.
    text = ('{"model": {"name": "m", "format": "tflite"}, "tests": [{"identifier": "t", '
            '"commands": ["{program} --graph={files.graph}"], '
            '"commands": {"tflite": {"num_threads": "4"}}}]}')
    spec = _load(tmp_path, {}, text)
    assert spec.tests[0].commands == ()
    [(field, why)] = spec.ignored
    assert field == "tests[0].commands" and "keeps the last" in why


def test_a_typo_with_a_number_is_still_an_error(tmp_path: Path) -> None:
    from benchlab.errors import SpecError

    with pytest.raises(SpecError, match="did you mean 'warmup'"):
        _load(tmp_path, {"model": {"name": "m", "format": "generic"},
                         "tests": [{"identifier": "t", "warmpu": 3}]})
