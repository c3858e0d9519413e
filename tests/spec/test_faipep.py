"""FAI-PEP compatibility mappings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlab.spec import load_spec
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
