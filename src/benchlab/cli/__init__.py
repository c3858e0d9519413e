"""The ``benchlab`` command: typer + rich, each command one library call (``commands.py``
holds the app and ``benchlab run``; ``ab``, ``lab``, ``zoo`` the other groups; ``options``,
``output`` and ``workloads`` what they share)."""

from __future__ import annotations

from benchlab.cli.commands import app, main

__all__ = ["app", "main"]
