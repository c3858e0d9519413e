"""Where names and modules are found: public names imported on first use, and old module paths.

``benchlab`` and ``benchlab.report`` list where each public name lives and import that module
when the name is first asked for (PEP 562 module ``__getattr__``): a runner process,
``benchlab --help`` and a script that only stores results do not pay for the reporters' rich or
the API's pydantic models.

:data:`MOVED_MODULES` lists the modules that stood at the top of the package before it was
arranged into folders; :class:`MovedModules` answers an import of an old path with the module at
its new one (the same object, so a name patched through either path is patched in both), with a
``DeprecationWarning`` naming the new path: the old paths go in :data:`OLD_PATHS_REMOVED_IN`
(CHANGELOG.md).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["MOVED_MODULES", "OLD_PATHS_REMOVED_IN", "MovedModules", "names_at_homes", "names_of"]

#: The release without :data:`MOVED_MODULES` (CHANGELOG.md says so too).
OLD_PATHS_REMOVED_IN = "0.2.0"

#: old module path → where the module lives now (docs/architecture.md, "Layers").
MOVED_MODULES: Mapping[str, str] = {
    "benchlab.ab.model": "benchlab.schema.comparison",
    "benchlab.artifacts": "benchlab.spec.artifacts",
    "benchlab.cli_ab": "benchlab.cli.ab",
    "benchlab.cli_lab": "benchlab.cli.lab",
    "benchlab.cli_options": "benchlab.cli.options",
    "benchlab.cli_output": "benchlab.cli.output",
    "benchlab.cli_workloads": "benchlab.cli.workloads",
    "benchlab.cli_zoo": "benchlab.cli.zoo",
    "benchlab.devicestate": "benchlab.harness.devicestate",
    "benchlab.diagnosis": "benchlab.schema.diagnosis",
    "benchlab.doctor": "benchlab.harness.doctor",
    "benchlab.environment": "benchlab.targets.environment",
    "benchlab.generation": "benchlab.schema.generation",
    "benchlab.hoststeps": "benchlab.harness.hoststeps",
    "benchlab.jobrun": "benchlab.harness.jobrun",
    "benchlab.metrics": "benchlab.schema.metrics",
    "benchlab.model_outputs": "benchlab.harness.outputs",
    "benchlab.noise": "benchlab.stats.noise",
    "benchlab.overrides": "benchlab.harness.overrides",
    "benchlab.race": "benchlab.stats.race",
    "benchlab.results": "benchlab.harness.results",
    "benchlab.rounds": "benchlab.harness.rounds",
    "benchlab.runstats": "benchlab.stats.runstats",
    "benchlab.scenario": "benchlab.schema.scenario",
    "benchlab.settings": "benchlab.schema.settings",
    "benchlab.step": "benchlab.protocol.step",
    "benchlab.sweep": "benchlab.harness.sweep",
    "benchlab.targets.doctor": "benchlab.harness.doctor",
    "benchlab.targets.selection": "benchlab.harness.selection",
    "benchlab.units": "benchlab.schema.units",
}


def names_at_homes(package: str, homes: Mapping[str, str],
                   namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package``: name → ``getattr(import_module(homes[name]), name)``,
    kept in ``namespace`` (the package's ``globals()``) so the next access is a plain one.

    An unknown name raises ``AttributeError`` (not ``ImportError``), which lets ``from package
    import submodule`` fall back to importing the submodule.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return __getattr__


def names_of(package: str, modules: Sequence[str], namespace: dict[str, Any]
             ) -> Callable[[str], Any]:
    """A ``__getattr__`` for a package of modules: its public face is every name in the
    ``__all__`` of each of its ``modules`` (names within the package), imported with its module
    on first use, so that importing one module of the package loads no other. ``modules`` is
    the order they are tried in: the light ones first (an unknown name imports them all before
    it is refused)."""

    def __getattr__(name: str) -> Any:
        if not name.startswith("__"):  # dunder probes (copy, pickle, inspect) load nothing
            for home in modules:
                module = importlib.import_module(f"{package}.{home}")
                if name in getattr(module, "__all__", ()):
                    value = getattr(module, name)
                    namespace[name] = value
                    return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def _importers_level() -> int:
    """The ``stacklevel`` of the frame that wrote the import, so Python's default filter shows
    the warning when ``__main__`` imports: past this module's frames (``warnings.warn`` itself
    steps over the import machinery's, without counting them)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and (frame.f_code.co_filename == __file__
                                 or frame.f_code.co_filename.startswith("<frozen importlib")):
        if frame.f_code.co_filename == __file__:
            level += 1
        frame = frame.f_back
    return level


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A finder for the old paths in ``moved``: ``import benchlab.sweep`` gives the module
    ``benchlab.harness.sweep``, registered under both names, and warns (``DeprecationWarning``)
    that the old path goes in :data:`OLD_PATHS_REMOVED_IN`.

    The ``benchlab`` package installs one (:meth:`install`, once per interpreter): scripts,
    plugins and notebooks written against the flat layout keep working for one more release,
    while the code of the package itself imports the new paths only
    (``tests/test_public_api.py`` holds both).
    """

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = dict(moved)
        self._own_specs: dict[str, importlib.machinery.ModuleSpec] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.moved:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = self.moved[spec.name]
        warnings.warn(
            f"{spec.name} is now {new}: import it from there (the old path goes in benchlab "
            f"{OLD_PATHS_REMOVED_IN})", DeprecationWarning, stacklevel=_importers_level())
        module = importlib.import_module(new)
        self._own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the old path's spec on the module it was handed; give it
        # back its own, which names the file it was loaded from (importlib.reload reads it).
        module.__spec__ = self._own_specs.pop(module.__spec__.name)

    @classmethod
    def install(cls, moved: Mapping[str, str] = MOVED_MODULES) -> None:
        """Add the finder to ``sys.meta_path`` unless an equal one is already there."""
        if not any(isinstance(finder, cls) for finder in sys.meta_path):
            sys.meta_path.append(cls(moved))
