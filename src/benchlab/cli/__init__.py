"""The ``benchlab`` command: typer + rich, each command one library call (``commands.py``
holds the app and ``benchlab run``; ``ab``, ``lab``, ``zoo`` the other groups; ``options``,
``output`` and ``workloads`` what they share)."""

from __future__ import annotations

from benchlab.lazy import names_of

# ``benchlab.cli:app`` and ``benchlab.cli:main`` were the command's entry points before the
# folder; installs made then still name them.
__getattr__ = names_of(__name__, "benchlab.cli.commands", globals())
