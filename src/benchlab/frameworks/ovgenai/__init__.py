"""The ``ovgenai`` framework: text generators as OpenVINO GenAI runs them (``openvino-genai``'s
``LLMPipeline`` on a stateful OpenVINO model), via the runner.

The adapter (harness side) is in ``adapter.py``; ``generative.py`` runs inside the runner
process. This package answers with the adapter's names on first use
(``benchlab.frameworks.lazy``), so a runner process importing ``generative`` pays for the
runtime alone, not for the harness's modules.
"""

from benchlab.frameworks.lazy import names_from

__getattr__ = names_from(__name__, f"{__name__}.adapter")
