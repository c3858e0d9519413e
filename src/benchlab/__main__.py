"""``python -m benchlab``: the same as the ``benchlab`` command."""

from __future__ import annotations

from benchlab.cli.commands import main

if __name__ == "__main__":
    main()
