"""Placeholder substitution, the placeholder map, and --string-map parsing."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest

from benchlab.errors import UsageError
from benchlab.spec import (
    BenchmarkSpec,
    load_spec,
    parse_string_map,
    placeholder_map,
    substitute,
)
from benchlab.spec.placeholders import arithmetic, unresolved

SQUEEZENET = Path(__file__).parent / "data" / "faipep" / "models" / "squeezenet" / "squeezenet.json"


def test_substitute_replaces_known_names_only() -> None:
    text = "run {model} --in {files.x} | awk '{print $1}' ${HOME} {HOME} {unknown}"
    out = substitute(text, {"model": "m", "files.x": "/d/x", "HOME": "h", "print $1": "no"})
    assert out == "run m --in /d/x | awk '{print $1}' ${HOME} h {unknown}"


def test_substitute_does_not_recurse() -> None:
    assert substitute("{a} {b}", {"a": "{b}", "b": "B"}) == "{b} B"


def test_placeholder_map_for_a_faipep_test() -> None:
    spec = load_spec(SQUEEZENET)
    test = spec.tests[1]
    files = {"files.predict": PurePosixPath("/t/predict_net.pb"), "files.init": "/t/init_net.pb"}
    values = placeholder_map(spec, test, files=files, target_dir="/t", extra={"program": "/b/x"})
    assert substitute(test.commands[0], values) == (
        "/b/x --net /t/predict_net.pb --init_net /t/init_net.pb --warmup 1 --iter 50 "
        "--input data --input_dims 4,3,224,224 --run_individual true"
    )
    assert values["name"] == values["model.name"] == "squeezenet"
    assert values["kind"] == values["model.kind"] == "deployment"
    assert values["identifier"] == "0[4x3x224x224]"
    assert values["inputs.data.type"] == "float32"
    assert values["TGTDIR"] == "/t"


def test_test_placeholders_beat_the_model_and_extra_beats_all(tmp_path: Path) -> None:
    spec = load_spec(SQUEEZENET)
    test = spec.tests[2]
    values = placeholder_map(spec, test, files={}, target_dir="/t", extra={"warmup": "9"})
    assert values["net_name"] == "squeezenet_v1"
    assert values["warmup"] == "9"


def test_file_keys_must_be_dotted() -> None:
    spec = load_spec(SQUEEZENET)
    with pytest.raises(ValueError, match="must start with"):
        placeholder_map(spec, spec.tests[0], files={"predict": "/x"}, target_dir="/t")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"K": "v", "N": 3, "B": true}', {"K": "v", "N": "3", "B": "true"}),
        ("K=v,K2=a=b", {"K": "v", "K2": "a=b"}),
        (" K = v ", {"K": " v"}),
        ("", {}),
    ],
)
def test_parse_string_map(text: str, expected: dict[str, str]) -> None:
    assert parse_string_map(text) == expected


@pytest.mark.parametrize("text", ['{"K": ', '{"K": [1]}', "K", "=v", "K=v,oops"])
def test_parse_string_map_rejects_bad_input(text: str) -> None:
    with pytest.raises(UsageError):
        parse_string_map(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50000/1000", "50"),
        ("7/2", "3.5"),
        ("10//3", "3"),
        ("2*(3+4)-1", "13"),
        ("-2*3", "-6"),
        ("1e3/10", "100"),
        ("3", None),  # no operator: a number stays as written
        ("224,224", None),
        ("a/b", None),
        ("2**10", None),  # only + - * / //
        ("__import__('os').getpid()", None),
        ("2024-01-02", None),  # not Python arithmetic (leading zeros)
        ("{INDEX}*50", None),
    ],
)
def test_arithmetic_reads_numbers_and_four_operators_only(text: str, expected: str | None) -> None:
    assert arithmetic(text) == expected


def test_arithmetic_names_a_division_by_zero() -> None:
    with pytest.raises(UsageError, match="divides by zero"):
        arithmetic("5/0")


def _faipep_accuracy_spec(tmp_path: Path, model: dict[str, object]) -> BenchmarkSpec:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({
        "model": {"name": "shufflenet", "format": "caffe2", **model},
        "tests": [{"identifier": "t", "commands": ["{program}"], "repeat": 4,
                   "labels": "{HOSTDIR}/labels_{INDEX}.txt", "first": "{INDEX}*{per_iter}"}],
    }))
    return load_spec(path)


def test_model_values_naming_placeholders_are_resolved_and_computed(tmp_path: Path) -> None:
    # FAI-PEP's "images_per_iter": "{total_images}/{repeat}", with numbers as numbers.
    spec = _faipep_accuracy_spec(tmp_path, {"total_images": 1000, "batch": 1,
                                            "per_iter": "{images_per_iter}",
                                            "images_per_iter": "{total_images}/{repeat}",
                                            "data": "{DATA}/val"})
    test = spec.tests[0]
    values = placeholder_map(spec, test, files={}, target_dir="/t",
                             extra={"DATA": "/sets", "HOSTDIR": "/h", "INDEX": "2"})
    assert values["images_per_iter"] == values["model.images_per_iter"] == "250"
    assert values["per_iter"] == "250"  # a chain
    assert values["first"] == "500"  # a test value, computed once INDEX is known
    assert values["labels"] == "/h/labels_2.txt"
    assert values["data"] == "/sets/val"
    assert values["batch"] == "1"
    # Without INDEX the test values keep what is still unknown, as written.
    partial = placeholder_map(spec, test, files={}, target_dir="/t")
    assert partial["first"] == "{INDEX}*250"
    assert partial["data"] == "{DATA}/val"


def test_the_string_map_replaces_a_computed_value_and_a_cycle_ends(tmp_path: Path) -> None:
    spec = _faipep_accuracy_spec(tmp_path, {"images_per_iter": "{total_images}/{repeat}",
                                            "total_images": 10, "per_iter": "{loop}",
                                            "loop": "{per_iter}"})
    values = placeholder_map(spec, spec.tests[0], files={}, target_dir="/t",
                             extra={"images_per_iter": "7"})
    assert values["images_per_iter"] == "7"
    assert values["model.images_per_iter"] == "2.5"  # 10 images over 4 repetitions
    assert "{" in values["loop"]  # a cycle stays unresolved instead of looping


def test_a_value_dividing_by_zero_names_the_placeholder(tmp_path: Path) -> None:
    spec = _faipep_accuracy_spec(tmp_path, {"total_images": 10, "zero": "0",
                                            "images_per_iter": "{total_images}/{zero}"})
    with pytest.raises(UsageError, match=r"\{images_per_iter\}.*divides by zero"):
        placeholder_map(spec, spec.tests[0], files={}, target_dir="/t")


def test_unresolved_names_what_a_spec_means_and_leaves_shell_braces() -> None:
    command = ("{FAIPEPROOT}/compare.py {output_files.softmax} --top {top} "
               "| awk '{print $1}' | awk '{next}' ${HOME} {files.golden}")
    assert unresolved(command) == ["FAIPEPROOT", "output_files.softmax", "files.golden"]
    assert unresolved("{MODEL_DIR}/m.pb {weights}", every=True) == ["MODEL_DIR", "weights"]
