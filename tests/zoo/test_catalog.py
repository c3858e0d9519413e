"""The one registry of export formats: every format has its exporter, keys and cache key."""

from __future__ import annotations

import importlib.metadata

from benchlab.exporting import exporters
from benchlab.exporting.cache import format_key
from benchlab.exporting.formats import (
    ALL_FORMATS,
    DECODER_FORMATS,
    DEFAULT_FORMATS,
    FORMAT_FILES,
    FORMATS,
    REFERENCE,
    format_of,
)


def test_every_format_has_its_exporter_and_nothing_else_does() -> None:
    for spec in FORMATS.values():
        assert callable(getattr(exporters, spec.exporter)), spec.name
    written = {name[len("export_"):] for name in exporters.__all__ if name.startswith("export_")}
    assert written == set(FORMATS)


def test_derived_views_agree_with_the_registry() -> None:
    assert ALL_FORMATS == tuple(FORMATS)
    # Off by default: two costly formats and every text generator's (which the generators
    # name themselves).
    assert set(DEFAULT_FORMATS) == set(ALL_FORMATS) - {"aoti", "pte_portable"} - set(
        DECODER_FORMATS)
    assert {"gguf_q4_k_m", "genai_onnx_int4", "ovgenai_int4"} <= set(DECODER_FORMATS)
    assert FORMAT_FILES["openvino"] == ("openvino", "openvino_bin")
    # The int8 formats write their recipe's simulated outputs too (optional files).
    assert FORMAT_FILES["onnx_int8"] == ("onnx_int8", "simulated_onnx_int8")
    assert FORMATS["pte_xnnpack_int8"].simulated_files == ("simulated_pte_xnnpack_int8",)
    assert [f.name for f in FORMATS.values() if f.simulated] == ["onnx_int8", "pte_xnnpack_int8"]
    assert format_of("reference") is REFERENCE and format_of("onnx") is FORMATS["onnx"]
    # ONNX is written before the formats converted from it.
    assert ALL_FORMATS.index("onnx") < min(ALL_FORMATS.index("onnx_int8"),
                                           ALL_FORMATS.index("openvino"))


def test_cache_key_names_the_packages_and_the_revision() -> None:
    key = format_key("fp", "onnx_int8")
    assert key.startswith("fp|onnx_int8|torch==") and "onnxruntime==" in key
    # Its simulated outputs hold the reference's input sets: a new reference is a miss too.
    assert key.endswith(f"|rev3|ref{REFERENCE.revision}")
    assert format_key("fp", "pte_xnnpack_int8").endswith(f"|rev1|ref{REFERENCE.revision}")
    assert format_key("fp", "reference").endswith("|rev2") and "numpy==" in format_key(
        "fp", "reference")
    assert "|rev" not in format_key("fp", "torchscript")


def test_what_exporting_needs_comes_from_the_registry() -> None:
    extras = set(importlib.metadata.metadata("benchlab").get_all("Provides-Extra") or ())
    for spec in [*FORMATS.values(), REFERENCE]:
        _, distribution, extra = spec.exporter_requires
        # What an export needs is among what decides its cache key, and the install hint
        # names one of benchlab's extras, or none ("": llama.cpp, which pip builds from
        # source, is installed by its own name).
        assert distribution in spec.packages, spec.name
        assert extra in extras or (extra == "" and spec.name == "gguf_q8_0"), spec.name
    # ONNX-only zoo models (no PyTorch entry) take what converts from an ONNX file.
    assert [f.name for f in FORMATS.values() if f.from_onnx] == ["onnx", "openvino", "onnx_int8"]
