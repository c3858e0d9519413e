"""The ``llamacpp`` framework: the zoo's text generators as GGUF files in llama.cpp, through
``llama-cpp-python`` in benchlab's runner (``generative.py``). It runs generative tests only:
llama.cpp has no forward-pass workload to offer benchlab's other tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchlab.errors import UsageError
from benchlab.frameworks.base import Invocation, JobContext, RunnerFramework, Staging
from benchlab.frameworks.llamacpp.device import (
    DEVICE_ONLY_OPTIONS,
    DEVICE_PREFIX,
    RUNNERS,
    device_invocation,
    parse_device_output,
    stage_device_files,
    uses_device_runner,
)
from benchlab.frameworks.options import THREADS, FrameworkOption, precision_option
from benchlab.protocol.lines import ParsedOutput
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.targets.base import CommandResult

__all__ = ["CACHE_TYPES", "GGUF_FILES", "LlamaCppFramework"]

#: ``precision`` → the model file key it runs: the zoo's fp32 GGUF file and llama.cpp's
#: quantizations of it (Q8_0, and the two 4-bit types llama-bench users compare first).
GGUF_FILES = {"fp32": "gguf", "q8_0": "gguf_q8_0", "q4_0": "gguf_q4_0", "q4_k_m": "gguf_q4_k_m"}
#: The key/value cache element types the ``cache_type`` option takes (llama.cpp: f16).
CACHE_TYPES = ("f16", "f32", "q8_0")


class LlamaCppFramework(RunnerFramework):
    """llama.cpp through ``llama-cpp-python``; its options are ``declared_options``
    (``benchlab frameworks llamacpp``).

    On a target without Python (a phone) it runs benchlab's own native runner instead,
    built for the device's CPU (``device.py``): ``runner``, ``arch`` and ``sources`` are
    about that runner."""

    name = "llamacpp"
    requires = ("llama_cpp", "llama-cpp-python", "llamacpp")
    #: The planner's cue: a forward-pass model is not for llama.cpp, installed or not.
    generative_only = True
    generative_backend = "benchlab.frameworks.llamacpp.generative:LlamaCppDecoder"
    generative_file = GGUF_FILES["fp32"]
    generative_precisions = GGUF_FILES
    generative_options = frozenset({"threads", "precision", "n_batch", "flash_attn",
                                    "cache_type", "n_ctx", "parallel", "poll"}
                                   | DEVICE_ONLY_OPTIONS)
    declared_options = (
        THREADS,
        precision_option(tuple(GGUF_FILES), "which GGUF file: the zoo's fp32 one or "
                         "llama.cpp's quantizations of it"),
        FrameworkOption("n_batch", int, "tokens per llama_decode", default=512, minimum=1),
        FrameworkOption("flash_attn", bool, "flash attention (llama-cpp-python's default: "
                        "off)", default=False),
        FrameworkOption("cache_type", str, "the key/value cache's element type (q8_0 needs "
                        "flash_attn=true)", default=CACHE_TYPES[0], choices=CACHE_TYPES),
        FrameworkOption("n_ctx", int, "the context of each sequence (default: what the test "
                        "needs)", minimum=1),
        FrameworkOption("parallel", int, "sequences decoded together (llama-server's -np): a "
                        "load scenario's server batches its queries on them", default=1,
                        minimum=1),
        FrameworkOption("poll", int, "the threadpool's polling level, as llama.cpp's tools "
                        "(none: attach no pool)", default=50, minimum=0, maximum=100,
                        words=("none",)),
        FrameworkOption("runner", str, "python: benchlab's runner; native: benchlab's own "
                        "llama.cpp runner built for the device; auto: native where the target "
                        "has no Python", default=RUNNERS[0], choices=RUNNERS),
        FrameworkOption("arch", str, "the CPU level the native runner is built for (aarch64: "
                        "armv8-a by default, armv8.2-a+dotprod...)"),
        FrameworkOption("sources", str, "a llama.cpp folder to build the native runner from "
                        "(default: llama-cpp-python's sdist)"),
    )

    def why_not_generative(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """The base checks (options known, the file of ``precision`` present), then each
        option's value: a precision without a file, a cache type, counts."""
        precision = str(options.get("precision", "fp32"))
        if precision not in GGUF_FILES:
            return f"llamacpp precision must be one of {', '.join(GGUF_FILES)}, not {precision!r}"
        why = super().why_not_generative(model, options)
        if why:
            return why
        cache = str(options.get("cache_type", "f16"))
        if cache not in CACHE_TYPES:
            return f"llamacpp cache_type must be one of {', '.join(CACHE_TYPES)}, not {cache!r}"
        flash = options.get("flash_attn")
        if flash is not None and str(flash).lower() not in ("true", "false", "1", "0"):
            return f"llamacpp flash_attn must be true or false, not {flash!r}"
        if cache == "q8_0" and str(flash).lower() not in ("true", "1"):
            return "llamacpp cache_type=q8_0 needs flash_attn=true (llama.cpp's rule)"
        runner = str(options.get("runner", "auto"))
        if runner not in RUNNERS:
            return f"llamacpp runner must be one of {', '.join(RUNNERS)}, not {runner!r}"
        poll = str(options.get("poll", "50")).lower()
        if poll != "none" and not (poll.isdigit() and int(poll) <= 100):
            return f"llamacpp poll must be 0 to 100 or none, not {options.get('poll')!r}"
        for option in ("n_batch", "n_ctx", "threads", "parallel"):
            value = options.get(option)
            if value is not None and (not str(value).isdigit() or int(value) < 1):
                return f"llamacpp {option} must be a positive integer, not {value!r}"
        return None

    def why_not_without_python(self, model: ModelDef,
                               options: Mapping[str, Any]) -> str | None:
        """The device runner generates there; ``runner=python`` needs the target's Python."""
        if str(options.get("runner", "auto")) == "python":
            return "llamacpp: runner=python needs Python, and the target has none"
        return None

    def device_files(self, staging: Staging) -> dict[str, Path]:
        """The native runner built for the device, where the job runs it (``device.py``)."""
        return stage_device_files(self, staging)

    def parse(self, results: Sequence[CommandResult]) -> ParsedOutput:
        """The device runner's lines where it ran; benchlab's metric lines otherwise."""
        if any(DEVICE_PREFIX in r.stdout for r in results):
            return parse_device_output(results)
        return super().parse(results)

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition of a generative test; nothing else runs."""
        if uses_device_runner(ctx.python, ctx.config.options):
            return [device_invocation(self, ctx)]
        host_options = {k: v for k, v in ctx.config.options.items()
                        if k not in DEVICE_ONLY_OPTIONS}
        ctx = replace(ctx, config=FrameworkConfig(ctx.config.name, host_options))
        if ctx.test.generate is None:
            raise UsageError(f"llamacpp runs generative tests only; test "
                             f"{ctx.test.identifier!r} has no generate block")
        invocation = self.generative_invocation(ctx)  # the options are checked there
        parallel = int(ctx.config.options.get("parallel", 1))
        scenario = ctx.test.scenario
        if parallel > 1 and (scenario is None or scenario.name not in ("server", "offline")):
            raise UsageError(f"llamacpp parallel={parallel} batches overlapping queries, which "
                             f"only a server or offline scenario has; test "
                             f"{ctx.test.identifier!r} runs "
                             f"{scenario.name if scenario else 'one stream of generations'}")
        return [invocation]
