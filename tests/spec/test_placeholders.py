"""Placeholder substitution, the placeholder map, and --string-map parsing."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from benchlab.errors import UsageError
from benchlab.spec import load_spec, parse_string_map, placeholder_map, substitute

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
