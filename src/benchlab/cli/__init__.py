"""The ``benchlab`` command: typer + rich, each command one library call (``commands.py``
holds the app and ``benchlab run``; ``ab``, ``lab``, ``zoo`` the other groups; ``options``,
``output`` and ``workloads`` what they share)."""

from __future__ import annotations

from benchlab.lazy import names_of

# Its face: the public names of these modules (benchlab.lazy.names_of); ``benchlab.cli:app``
# and ``benchlab.cli:main`` were the command's entry points before the folder, and installs
# made then still name them.
PUBLIC_MODULES = ("commands", "options", "output", "workloads", "labels", "config", "zoo", "ab",
                  "lab", "frameworks", "helptext", "results")
__getattr__ = names_of(__name__, PUBLIC_MODULES, globals())
