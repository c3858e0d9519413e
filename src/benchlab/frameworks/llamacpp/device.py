"""llama.cpp on a device without Python: benchlab's own runner, built for the device's CPU.

Where the target has no Python (a phone), or the ``runner=native`` option asks for it, the
``llamacpp`` framework builds ``benchlab-llama-runner`` (:mod:`benchlab.devicetools.llamacpp`)
for the device's architecture, once per cache, and pushes it with the GGUF file. The runner
prints clock readings; this module turns them into the same metrics benchlab's Python runner
prints (:func:`benchlab.runner.generate.generation_values`). For accuracy, the job's first
process also answers the model's reference: the reference tokens travel as raw ``int32``
files, the answers come back as raw tensors with a manifest
(:mod:`benchlab.protocol.tensorfiles`), and the host scores them
(:func:`benchlab.runner.generate.score_answers`): SQNR, KL, token agreement, first divergence
and perplexity measured on the device, judged here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.devicetools.elf import architecture_of_abi
from benchlab.devicetools.llamacpp import RUNNER, build_llama_tools
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.errors import TargetError, UsageError
from benchlab.frameworks.base import Invocation, JobContext, RunnerFramework, Staging
from benchlab.frameworks.native.common import SampleList
from benchlab.protocol.lines import ParsedOutput
from benchlab.protocol.tensorfiles import read_tensors
from benchlab.runner.generate import (
    GenerationTimes,
    ReferenceAnswers,
    forced_tokens,
    generation_values,
    load_generative_reference,
    score_answers,
)
from benchlab.schema.metrics import METRICS
from benchlab.schema.result import DetailKey, Metric
from benchlab.targets.armcpu import arm_cpu
from benchlab.targets.base import CommandResult

__all__ = ["DEVICE_PREFIX", "device_invocation", "parse_device_output", "stage_device_files",
           "uses_device_runner"]

#: The prefix of every line the device runner prints for the host.
DEVICE_PREFIX = "BENCHLAB_DEVICE "
RUNNER_KEY = "native.llama_runner"
BUILD_KEY = "native.llama_build"
#: The reference tokens pushed for the answers, by key; they land side by side in the workdir.
ANSWER_INPUTS = {"native.answer_prompt": "prompt.bin", "native.answer_forced": "forced.bin",
                 "native.answer_text": "text.bin"}
ANSWER_OUTPUTS = ("outputs.json", "forced_logits.bin", "free_tokens.bin", "text_logprobs.bin")
#: Options the device runner reads beside the host backend's (``runner``, ``arch``, ``sources``).
DEVICE_ONLY_OPTIONS = frozenset({"runner", "arch", "sources"})
_HOST_ONLY_OPTIONS = ("poll", "parallel")
RUNNERS = ("auto", "python", "native")


def uses_device_runner(python: str, options: Mapping[str, Any]) -> bool:
    """Whether a job runs the native runner: ``runner=native``, or ``auto`` (the default)
    on a target without Python."""
    runner = str(options.get("runner", "auto"))
    if runner not in RUNNERS:
        raise UsageError(f"llamacpp runner must be one of {', '.join(RUNNERS)}, not {runner!r}")
    return runner == "native" or (runner == "auto" and not python)


def stage_device_files(framework: RunnerFramework, staging: Staging) -> dict[str, Path]:
    """The runner built for the device (from the cache when it was built before), its build
    facts, and the reference's tokens as raw files; nothing when the job runs the Python
    runner."""
    options = staging.config.options
    if not uses_device_runner(staging.python, options):
        return {}
    architecture = architecture_of_abi(staging.abi)
    if architecture is None:
        raise UsageError(f"llamacpp: cannot tell the device's CPU (ABI {staging.abi!r}), so "
                         "there is nothing to build its runner for")
    sources = options.get("sources")
    tools = build_llama_tools(
        architecture, device_tools_dir(Path(staging.cache_root)),
        arch_flags=str(options["arch"]) if options.get("arch") else None,
        sources=Path(str(sources)) if sources else None, progress=staging.progress)
    scratch = Path(staging.scratch)
    facts = scratch / "llama-build.json"
    facts.write_text(json.dumps({
        "key": tools.key, "architecture": tools.architecture, "built_now": tools.built_now,
        **{k: tools.facts.get(k) for k in ("arch_flags", "toolchain", "compiler", "sources",
                                            "build_seconds")}}, sort_keys=True) + "\n")
    files = {RUNNER_KEY: tools.program(RUNNER), BUILD_KEY: facts}
    reference = staging.local_files.get("files.reference")
    if reference is not None and staging.test.generate is not None:
        try:
            ref = load_generative_reference(str(reference))
        except ValueError:
            ref = None  # a forward-pass reference: nothing for a generator to answer
        if ref is not None:
            tokens = {"prompt.bin": ref.prompt,
                      "forced.bin": forced_tokens(ref, staging.test.generate.compare_tokens),
                      "text.bin": ref.text}
            for key, name in ANSWER_INPUTS.items():
                np.asarray(tokens[name], dtype="<i4").tofile(scratch / name)
                files[key] = scratch / name
    return files


def device_invocation(framework: RunnerFramework, ctx: JobContext) -> Invocation:
    """The runner's command for one repetition; the first also answers the reference."""
    options, test = ctx.config.options, ctx.test
    given = sorted(set(options) & set(_HOST_ONLY_OPTIONS))
    if given:
        raise UsageError(f"llamacpp on a device takes no {', '.join(given)} option (the "
                         "device runner generates one stream with llama.cpp's own threads)")
    work = test.generate
    if work is None:
        raise UsageError(f"llamacpp runs generative tests only; test {test.identifier!r} "
                         "has no generate block")
    runner = ctx.files.get(RUNNER_KEY)
    if runner is None:
        raise UsageError("llamacpp: the device runner was not staged on the target")
    model = framework.staged_file(ctx, framework.generative_file_key(options) or "gguf")
    argv = [runner, "--model", model, "--prompt-tokens", str(work.prompt_tokens),
            "--new-tokens", str(work.new_tokens), "--depth", str(work.depth),
            "--warmup", str(test.warmup), "--iterations", str(max(test.iter, 1)),
            "--seed", str(ctx.repetition)]
    threads = options.get("threads", test.threads)
    for flag, value in (("--threads", threads), ("--n-batch", options.get("n_batch")),
                        ("--n-ctx", options.get("n_ctx")),
                        ("--cache-type", options.get("cache_type"))):
        if value is not None:
            argv += [flag, str(value)]
    if str(options.get("flash_attn", "false")).lower() in ("true", "1"):
        argv += ["--flash-attn", "1"]
    if test.max_time:
        argv += ["--max-time", f"{test.max_time:g}"]
    if test.profile_ops:
        argv.append("--profile-ops")
    if BUILD_KEY in ctx.files:
        argv += ["--facts", ctx.files[BUILD_KEY]]
    pull: tuple[str, ...] = ()
    prompt = ctx.files.get("native.answer_prompt")
    if ctx.repetition == 0 and prompt is not None:
        argv += ["--answers", prompt.rsplit("/", 1)[0], "--compare", str(work.compare_tokens)]
        pull = ANSWER_OUTPUTS
    return replace(framework.native_invocation(ctx, argv), pull=pull)


def _lines(results: Sequence[CommandResult]) -> list[dict[str, Any]]:
    found = []
    for result in results:
        for line in result.stdout.splitlines():
            if line.startswith(DEVICE_PREFIX):
                try:
                    value = json.loads(line[len(DEVICE_PREFIX):])
                except ValueError:
                    continue
                if isinstance(value, dict):
                    found.append(value)
    return found


def _answers(result_files: Mapping[str, Path], compare: int) -> dict[Metric, float]:
    """Score the answers the device wrote against the host's copy of the reference."""
    manifest = result_files.get("outputs.json")
    if manifest is None:
        raise TargetError("the device runner said it wrote its answers, and outputs.json did "
                          "not come back")
    reference = result_files.get("files.reference")
    if reference is None:
        raise TargetError("the model's reference is not on the host to score the answers")
    try:
        arrays = read_tensors(manifest, result_files)
        answers = ReferenceAnswers(arrays["forced_logits"], arrays["free_tokens"],
                                   arrays["text_logprobs"])
        ref = load_generative_reference(str(reference))
    except (ValueError, KeyError) as exc:
        raise TargetError(f"the device's answers do not read: {exc}") from None
    vocab = ref.logits.shape[-1]
    if answers.forced_logits.ndim != 2 or answers.forced_logits.shape[1] != vocab:
        raise TargetError(f"the device's logits have shape {list(answers.forced_logits.shape)}; "
                          f"the model's vocabulary has {vocab} tokens")
    return score_answers(ref, answers, compare)


def parse_device_output(results: Sequence[CommandResult]) -> ParsedOutput:
    """The device runner's lines (and pulled answers) as benchlab's samples and details."""
    samples = SampleList()
    details: dict[str, Any] = {DetailKey.TOOL: RUNNER,
                               DetailKey.LATENCY_SAMPLES: "per_iteration"}
    cold: GenerationTimes | None = None
    timed: list[GenerationTimes] = []
    prompt_tokens = 0
    files: dict[str, Path] = {}
    for result in results:
        files.update(result.files)
    for line in _lines(results):
        if "cpu" in line:
            details["device_cpu"] = arm_cpu(line["cpu"])
        elif "system_info" in line:
            details["kernels"] = str(line["system_info"]).strip(" |")
        elif "build" in line:
            details["device_build"] = line["build"]
        elif "load_ms" in line:
            samples.add("NET", Metric.LOAD_TIME, float(line["load_ms"]), "ms")
            prompt_tokens = int(line.get("prompt_tokens", 0))
            details[DetailKey.THREADS] = line.get("threads")
            details["n_ctx"] = line.get("n_ctx")
            details[DetailKey.GENERATION] = {k: line.get(k) for k in
                                             ("prompt_tokens", "new_tokens", "depth")}
        elif "generation" in line:
            times = GenerationTimes(int(line["start"]), tuple(int(t) for t in line["tokens"]))
            if line["generation"] == "cold":
                cold = times
            else:
                timed.append(times)
        elif "ops" in line:
            for op, value in sorted(line["ops"].items()):
                samples.add(op, Metric.LATENCY, float(value["ms"]), "ms")
        elif "answers" in line:
            for metric, value in _answers(files, int(line.get("compare", 0))).items():
                if np.isfinite(value):
                    samples.add("NET", metric, value, METRICS[metric].unit)
        elif "peak_rss_kib" in line:
            samples.add("NET", Metric.MEMORY_PEAK, int(line["peak_rss_kib"]) / 1024.0, "MiB")
    if cold is not None and timed and prompt_tokens:
        for metric, value, unit in generation_values(cold, timed, prompt_tokens):
            samples.add("NET", metric, value, unit)
    return ParsedOutput(samples=tuple(samples.items), summaries=(), details=details, infos=())
