"""``python -m benchlab.runner '<json config>'``: measure one model in this fresh process."""

from __future__ import annotations

import gc
import sys

from benchlab.runner.loop import main

if __name__ == "__main__":
    code = main(sys.argv[1:])
    # Everything is measured and printed. Interpreter shutdown garbage-collects every object
    # the runtime created, which takes about half a second after importing torch; frozen
    # objects are skipped by those collections. Shutdown otherwise runs as usual (atexit
    # handlers, buffered output, a crash on exit still shows in the exit status).
    gc.freeze()
    sys.exit(code)
