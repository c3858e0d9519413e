"""The ``benchlab`` command: typer + rich, each command one library call (``commands.py``
holds the app and ``benchlab run``; ``ab``, ``lab``, ``zoo`` the other groups; ``options``,
``output`` and ``workloads`` what they share)."""

from __future__ import annotations

from benchlab.lazy import names_of

# ``benchlab.cli:app`` and ``benchlab.cli:main`` were the command's entry points before the
# folder; installs made then still name them.
#: The package's public face: every name in these modules' ``__all__``, in this order.
PUBLIC_MODULES = (
    "benchlab.cli.commands",
    "benchlab.cli.options",
    "benchlab.cli.output",
    "benchlab.cli.workloads",
    "benchlab.cli.labels",
    "benchlab.cli.config",
    "benchlab.cli.zoo",
    "benchlab.cli.ab",
    "benchlab.cli.lab",
    "benchlab.cli.frameworks",
    "benchlab.cli.helptext",
    "benchlab.cli.results",
)
__getattr__ = names_of(__name__, PUBLIC_MODULES, globals())
