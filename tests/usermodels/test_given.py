"""What a user gives as a model, read and checked before anything runs: factories, files, Hugging
Face folders, input shapes, input data, and the one-line reasons of failed exports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchlab.errors import ModelBuildError, UsageError
from benchlab.spec.types import InputDef
from benchlab.usermodels.given import input_defs, parse_input, parse_model
from benchlab.exporting.reasons import failure_reason
from benchlab.exporting.job import data_sets


def test_a_factory_in_a_file_is_named_after_the_file(tmp_path: Path) -> None:
    (tmp_path / "mynet.py").write_text("def build():\n    return None\n")
    given = parse_model(f"{tmp_path}/mynet.py:build")
    assert (given.kind, given.name, given.path) == ("factory", "mynet", tmp_path / "mynet.py")
    assert given.text == f"{tmp_path / 'mynet.py'}:build"  # absolute: jobs run elsewhere
    assert parse_model("mypkg.nets:build_small").name == "nets"


@pytest.mark.parametrize("text, words", [
    ("missing.py:build", "no file missing.py"),
    ("no/such/model.onnx", "no such file"),
    ("1bad-name:build", "file.py:factory"),
])
def test_what_does_not_exist_is_named(tmp_path: Path, text: str, words: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=words):
        parse_model(text)


def test_a_file_that_is_not_the_model_its_suffix_says_is_refused(tmp_path: Path) -> None:
    for name, reader in [("m.tflite", "LiteRT"), ("m.pte", "ExecuTorch"), ("m.gguf", "llama.cpp"),
                         ("m.pt2", "torch.export")]:
        (tmp_path / name).write_bytes(b"this is a text file, not a model")
        with pytest.raises(UsageError, match=f"m.{name.split('.')[1]}: not a .*{reader}"):
            parse_model(tmp_path / name)
    (tmp_path / "m.txt").write_text("hello")
    with pytest.raises(UsageError, match="unknown kind of file .txt"):
        parse_model(tmp_path / "m.txt")
    (tmp_path / "ir.xml").write_text("<?xml version='1.0'?><net/>")
    with pytest.raises(UsageError, match="its weights ir.bin are not beside it"):
        parse_model(tmp_path / "ir.xml")
    (tmp_path / "good.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    assert parse_model(tmp_path / "good.gguf").kind == "file"


def test_a_hugging_face_folder_needs_its_config_and_weights(tmp_path: Path) -> None:
    folder = tmp_path / "my-bert"
    folder.mkdir()
    with pytest.raises(UsageError, match="no config.json"):
        parse_model(folder)
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"],
                                                    "model_type": "bert"}))
    with pytest.raises(UsageError, match="no weights"):
        parse_model(folder)
    (folder / "model.safetensors").write_bytes(b"{}")
    given = parse_model(folder)
    assert (given.kind, given.name) == ("huggingface", "my-bert")


def test_input_shapes_from_text_and_from_example_arrays() -> None:
    assert parse_input("1x3x224x224") == InputDef("input0", (1, 3, 224, 224), "float32")
    assert parse_input("ids=1x128:int64") == InputDef("ids", (1, 128), "int64")
    assert input_defs(["2x8", np.zeros((1, 4), np.int32)]) == (
        InputDef("input0", (2, 8), "float32"), InputDef("input1", (1, 4), "int32"))
    for bad, words in [("1x3xA", "whole numbers"), ("1x0", "positive"),
                       ("1x3:float7", "unknown dtype"), ("a b=1x3", "bad input name")]:
        with pytest.raises(UsageError, match=words):
            parse_input(bad)


def test_input_data_holds_sets_of_the_model_s_shapes(tmp_path: Path) -> None:
    path = tmp_path / "data.npz"
    # Ten sets of a batch-of-one input, stacked without the batch axis: taken as [1, 4] each.
    np.savez(path, x=np.arange(40, dtype=np.float32).reshape(10, 4))
    sets = data_sets(path, [[1, 4]])
    assert len(sets) == 10 and sets[3][0].shape == (1, 4) and sets[3][0][0, 0] == 12
    with pytest.raises(ModelBuildError, match="hold no sets of the input shape"):
        data_sets(path, [[1, 5]])
    with pytest.raises(ModelBuildError, match="holds 1 array.*takes 2 input"):
        data_sets(path, [[1, 4], [1, 4]])
    (tmp_path / "junk.npz").write_text("not numpy")
    with pytest.raises(ModelBuildError, match="cannot read input data"):
        data_sets(tmp_path / "junk.npz", [[1, 4]])


def _forward(x: int) -> int:
    if x > 0:
        raise ValueError("the user's model tripped here")
    return x


def test_a_failure_reason_is_one_line_at_its_root_naming_the_user_s_line() -> None:
    try:
        try:
            _forward(1)
        except ValueError as inner:
            raise RuntimeError("\x1b[96mstep 1/3\x1b[0m of the export failed\nmore") from inner
    except RuntimeError as error:
        reason = failure_reason(error)
    line = _forward.__code__.co_firstlineno + 2
    assert reason == f"ValueError: the user's model tripped here (at test_given.py:{line})"
    # A generated file or a converter's own code is no user's line.
    message = 'boom\nFile "<eval_with_key>.3", line 9, in forward'
    assert failure_reason(RuntimeError(message)) == "RuntimeError: boom"
