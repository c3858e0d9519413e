"""Tests of plugin discovery: built-in frameworks and targets, and third-party packages.

Third-party plugins are real installed distributions as far as ``importlib.metadata`` can
tell: a ``*.dist-info`` directory with an ``entry_points.txt``, put on ``sys.path``.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.errors import PluginLoadError, UnknownPluginError, UserError
from benchlab.frameworks.base import Framework
from benchlab.frameworks.generic import GenericFramework
from benchlab.frameworks.onnxruntime import OnnxRuntimeFramework
from benchlab.frameworks.pytorch import PyTorchFramework
from benchlab.plugins import (
    FRAMEWORK_GROUP,
    TARGET_GROUP,
    available_names,
    load_framework,
    load_target,
)
from benchlab.targets.base import Target
from benchlab.targets.host import HostTarget


@pytest.mark.parametrize(
    ("name", "cls"),
    [("generic", GenericFramework), ("pytorch", PyTorchFramework),
     ("onnxruntime", OnnxRuntimeFramework)],
)
def test_builtin_frameworks_load(name: str, cls: type) -> None:
    framework = load_framework(name)
    assert type(framework) is cls
    assert isinstance(framework, Framework)
    assert framework.name == name


def test_host_target_loads_with_its_options(tmp_path: Path) -> None:
    target = load_target("host", workroot=tmp_path)
    assert isinstance(target, HostTarget) and isinstance(target, Target)
    assert Path(target.make_workdir("x")).parent == tmp_path


def test_builtin_names_are_listed() -> None:
    assert {"generic", "pytorch", "onnxruntime"} <= set(available_names(FRAMEWORK_GROUP))
    assert "host" in available_names(TARGET_GROUP)
    assert available_names(FRAMEWORK_GROUP) == sorted(available_names(FRAMEWORK_GROUP))


def test_unknown_names_list_what_is_registered() -> None:
    with pytest.raises(UnknownPluginError) as info:
        load_framework("tensorflow-nightly")
    message = str(info.value)
    assert "'tensorflow-nightly'" in message
    for known in ("generic", "onnxruntime", "pytorch"):
        assert known in message
    # A user error: the fix is in the user's input, so the CLI exits 2 rather than 3.
    assert isinstance(info.value, UserError)
    with pytest.raises(UnknownPluginError, match="host"):
        load_target("phone")


@pytest.fixture
def vendor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An installed third-party distribution registering a working and two broken plugins."""
    (tmp_path / "vendor_plugin.py").write_text(textwrap.dedent(
        """
        from benchlab.frameworks.generic import GenericFramework
        from benchlab.targets.host import HostTarget

        class VendorFramework(GenericFramework):
            name = "vendorfw"

        class VendorTarget(HostTarget):
            name = "board"

        class NotAFramework:
            pass
        """
    ))
    dist = tmp_path / "benchlab_vendor-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: benchlab-vendor\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(
        """
        [benchlab.frameworks]
        vendorfw = vendor_plugin:VendorFramework
        missingfw = vendor_plugin_does_not_exist:Framework
        notafw = vendor_plugin:NotAFramework

        [benchlab.targets]
        board = vendor_plugin:VendorTarget
        """
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("vendor_plugin", None)


def test_a_third_party_plugin_is_found_and_loaded(vendor: Path) -> None:
    assert {"vendorfw", "missingfw", "notafw"} <= set(available_names(FRAMEWORK_GROUP))
    framework = load_framework("vendorfw")
    assert framework.name == "vendorfw" and isinstance(framework, Framework)
    assert load_target("board").name == "board"


def test_a_plugin_that_fails_to_import_names_its_distribution(vendor: Path) -> None:
    with pytest.raises(PluginLoadError) as info:
        load_framework("missingfw")
    assert "'missingfw'" in str(info.value)
    assert "benchlab-vendor" in str(info.value)


def test_a_plugin_that_is_not_a_framework_is_rejected(vendor: Path) -> None:
    with pytest.raises(PluginLoadError, match="does not implement the Framework protocol"):
        load_framework("notafw")


def test_loading_a_framework_does_not_import_its_runtime() -> None:
    import subprocess

    code = (
        "import sys; from benchlab.plugins import load_framework; "
        "[load_framework(n) for n in ('generic', 'pytorch', 'onnxruntime')]; "
        "print(sorted(m for m in ('torch', 'onnxruntime') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
