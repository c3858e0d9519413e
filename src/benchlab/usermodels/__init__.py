"""Your own model: a PyTorch module or factory, an ONNX file, or a file a runtime reads as it is,
turned into what the zoo's models are (export definitions for the export pipeline, or specs).

:mod:`benchlab.usermodels.given` reads what the user gave (no heavy imports);
:mod:`benchlab.usermodels.prepare` turns it into export definitions and specs;
:mod:`benchlab.usermodels.snapshot` freezes a PyTorch module (imports torch);
:mod:`benchlab.exporting.reasons` says in one line why an export failed.
This package's ``__init__`` imports nothing: the export process reads ``reasons`` from it.
"""
