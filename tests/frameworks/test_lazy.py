"""The frameworks' lazy package hooks: names resolve on first use, nothing else loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchlab.frameworks.lazy import names_from


def test_a_name_resolves_from_the_module() -> None:
    hook = names_from("pkg", "benchlab.frameworks.base")
    from benchlab.frameworks.base import RunnerFramework

    assert hook("RunnerFramework") is RunnerFramework


def test_unknown_and_dunder_names_are_attribute_errors_naming_the_package() -> None:
    hook = names_from("pkg", "benchlab.frameworks.base")
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'nope'"):
        hook("nope")
    with pytest.raises(AttributeError, match="'__wrapped__'"):
        hook("__wrapped__")


def test_importing_a_framework_package_loads_no_adapter_until_asked() -> None:
    probe = (
        "import sys, benchlab.frameworks.openvino as ov\n"
        "assert 'benchlab.frameworks.openvino.adapter' not in sys.modules\n"
        "assert 'benchlab.frameworks.base' not in sys.modules\n"
        "cls = ov.OpenVinoFramework\n"
        "assert cls.__module__ == 'benchlab.frameworks.openvino.adapter'\n"
        "import benchlab.frameworks as f\n"
        "assert f.Framework is sys.modules['benchlab.frameworks.base'].Framework\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr


def test_an_adapters_own_import_error_is_shown_as_it_is(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # An adapter that breaks while importing: its error, not "no attribute 'XFramework'".
    (tmp_path / "broken_adapter.py").write_text(
        "import types\ntypes.NoSuchThing\nclass XFramework: pass\n")
    (tmp_path / "missing_dep_adapter.py").write_text(
        "import no_such_runtime_binding\nclass XFramework: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="broken_adapter failed.*NoSuchThing"):
        names_from("pkg", "broken_adapter")("XFramework")
    with pytest.raises(ModuleNotFoundError, match="no_such_runtime_binding"):
        names_from("pkg", "missing_dep_adapter")("XFramework")
