"""``python -m benchlab.runner '<json config>'``: measure one model in this fresh process."""

from __future__ import annotations

import sys

from benchlab.runner.loop import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
