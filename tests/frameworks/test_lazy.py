"""The frameworks' lazy package hooks: names resolve on first use, nothing else loads."""

from __future__ import annotations

import subprocess
import sys

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
