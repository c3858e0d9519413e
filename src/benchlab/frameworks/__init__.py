"""Framework adapters: one per inference runtime, registered as ``benchlab.frameworks``.

Each runtime's package holds ``adapter.py`` (the harness side: which files, which options, the
runner command) and ``backend.py`` (the runner side, the only module that imports the runtime).
Names here load on first use: a runner process imports ``benchlab.frameworks.<rt>.backend``,
and this package must not pull the harness's modules into the ``import_time`` it reports.
"""

from benchlab.frameworks.lazy import names_from

__getattr__ = names_from(__name__, "benchlab.frameworks.base")
