"""A backend's raw outputs, for users who evaluate accuracy with their own code.

:func:`outputs` runs one model on one framework configuration through the same runner process
a benchmark uses (same file, same options, same inputs) and returns the outputs as numpy
arrays next to the reference and the error statistics benchlab computes from them.
"""

from __future__ import annotations

import json
import posixpath
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.spec.artifacts import ArtifactCache, default_cache_dir
from benchlab.schema.diagnosis import LayerTable
from benchlab.errors import InfrastructureError, UsageError
from benchlab.frameworks.base import Framework, JobContext, Staging, Unsupported, runtime_of
from benchlab.frameworks.common import REFERENCE_KEY, is_generative
from benchlab.frameworks.native.own_runners import MANIFEST
from benchlab.plugins import check_configurations
from benchlab.harness.devicefit import ArmFeatures
from benchlab.harness.jobrun import fetch_files
from benchlab.harness.keptfiles import push_device_files
from benchlab.plugins import load_framework, open_target
from benchlab.protocol.lines import parse_output
from benchlab.protocol.tensorfiles import read_tensors
from benchlab.runner.accuracy import error_stats, load_reference, save_reference
from benchlab.runner.generate import ReferenceAnswers, load_generative_reference, score_answers
from benchlab.schema.generation import Generation
from benchlab.devicetools.elf import abi_of
from benchlab.schema.result import DetailKey
from benchlab.schema.settings import setting_info
from benchlab.spec.types import BenchmarkSpec, FrameworkConfig, TestCase
from benchlab.targets.base import RunRequest, Target
from benchlab.zoo import ZOO, zoo_specs

__all__ = ["ModelOutputs", "outputs"]


@dataclass(frozen=True)
class ModelOutputs:
    """What one backend returned for one set of inputs.

    ``errors`` holds benchlab's statistics (``error_max_abs``, ``sqnr``...) against
    ``reference`` and is empty when there is no reference to compare with. ``layers`` is the
    per-layer error table when it was asked for (``outputs(..., layer_errors=True)``).
    """

    model: str
    framework: FrameworkConfig
    inputs: dict[str, np.ndarray]
    outputs: list[np.ndarray]
    reference: list[np.ndarray] | None = None
    errors: dict[str, float] = field(default_factory=dict)
    layers: LayerTable | None = None

    def as_torch(self) -> list[Any]:
        """The outputs as torch tensors (imports torch)."""
        import torch

        return [torch.from_numpy(np.ascontiguousarray(a)) for a in self.outputs]


def _spec(model: str | Path | BenchmarkSpec, cache: ArtifactCache) -> BenchmarkSpec:
    if isinstance(model, BenchmarkSpec):
        return model
    if isinstance(model, str) and model in ZOO:
        return zoo_specs([model], cache)[0]
    from benchlab.spec import load

    specs = load(Path(model))
    if not specs:
        raise UsageError(f"{model}: the spec holds no model")
    return specs[0]


def outputs(
    model: str | Path | BenchmarkSpec,
    framework: str | FrameworkConfig,
    *,
    inputs: Mapping[str, np.ndarray] | None = None,
    target: str | Target = "host",
    cache_dir: Path | None = None,
    timeout: float | None = None,
    layer_errors: bool = False,
) -> ModelOutputs:
    """Run ``model`` (a zoo name, a spec file or a loaded spec) once on ``framework``.

    ``framework`` is a name with options (``"onnxruntime:precision=int8"``) or a
    :class:`FrameworkConfig`. Without ``inputs`` the model's reference inputs are used (zoo
    models have them) or seeded random ones; with ``inputs`` nothing is compared unless the
    reference was made from the same inputs. ``target`` (``"ssh:host=pi,python=..."``,
    ``"adb:serial=X,python=..."`` or a target object) runs it on that device: the model and
    inputs are pushed, the outputs pulled back, and the errors computed here, as on the host.
    With ``runner=native`` (``"executorch:runner=native"``), or on a device without Python
    (ExecuTorch's ``runner=auto`` there), the runner benchlab builds for the device's CPU
    runs once and hands its outputs back as raw tensors.
    On a device without Python (a phone), a text generator on ``llamacpp`` answers through
    the runner benchlab builds for the device's CPU: the outputs are the prefill logits of the
    model's reference prompt, and ``errors`` its scores (SQNR, KL, token agreement...).
    ``layer_errors`` also compares every layer's output with the reference model's, in the
    runner as ``--layer-errors`` does (:attr:`ModelOutputs.layers`). ``timeout`` (s) kills the
    runner; by default the ``timeout`` test setting's default.
    """
    from benchlab.harness.sweep import parse_framework

    config = parse_framework(framework) if isinstance(framework, str) else framework
    check_configurations([config])  # before a zoo model's first export
    cache = ArtifactCache(cache_dir or default_cache_dir())
    spec = _spec(model, cache)
    adapter = load_framework(config.name)
    configs = adapter.configurations(spec.model, [config] if config.options else [])
    if isinstance(configs, Unsupported):
        raise UsageError(f"{spec.model.name} cannot run on {config.name}: {configs.reason}")
    chosen = configs[0]
    device = open_target(target)
    test = replace(spec.tests[0], warmup=0, iter=1, min_time=0.0, repeat=1, profile_ops=False,
                   target_ci=None, max_time=None, layer_errors=layer_errors)
    timeout = timeout if timeout is not None else setting_info("timeout").default
    runs_native = getattr(adapter, "runs_native_runner", None)
    if not is_generative(spec.model) and runs_native is not None and runs_native(
            device.python_executable(), chosen.options):
        # A runner benchlab builds (ExecuTorch's; on a phone, its bundle): raw tensors in
        # and out, compared here.
        return _native_outputs(device, adapter, spec, test, chosen, cache, inputs, timeout)
    if not device.python_executable():
        # A phone: only a framework that builds its own runner for it can hand outputs back.
        return _answers_without_python(device, adapter, spec, test, chosen, cache, timeout)
    with tempfile.TemporaryDirectory(prefix="benchlab-outputs-") as tmp:
        local = fetch_files(spec, test, cache)
        reference = None
        if REFERENCE_KEY in spec.model.files:
            reference = load_reference(local[f"files.{REFERENCE_KEY}"])
        if inputs is not None:
            given = Path(tmp) / "inputs.npz"
            same = reference is not None and list(inputs) == list(reference.inputs) and all(
                np.array_equal(np.asarray(inputs[k]), reference.inputs[k]) for k in inputs)
            save_reference(given, inputs, reference.outputs if same and reference else [],
                           reference.task if reference else "")
            local[f"files.{REFERENCE_KEY}"] = given
            reference = load_reference(given)
        got, details = _run_on(device, adapter, spec, test, chosen, local, Path(tmp), timeout)
        if reference is not None and reference.inputs:
            used = dict(reference.inputs)
        else:  # the runner's seeded inputs for repetition 0, made the same way here
            from benchlab.runner.config import InputConfig
            from benchlab.runner.loop import make_inputs

            used = make_inputs([InputConfig(name=i.name, shape=list(i.shape), dtype=i.dtype)
                                for i in test.inputs], 0)
    errors: dict[str, float] = {}
    expected = reference.outputs if reference is not None and reference.outputs else None
    if expected is not None:
        errors = error_stats(got, expected, reference.task if reference else "")
    return ModelOutputs(model=spec.model.name, framework=chosen, inputs=used, outputs=got,
                        reference=expected, errors=errors,
                        layers=LayerTable.from_detail(details.get(DetailKey.LAYER_ERRORS)))


def _native_outputs(device: Target, adapter: Framework, spec: BenchmarkSpec, test: TestCase,
                   config: FrameworkConfig, cache: ArtifactCache,
                   inputs: Mapping[str, np.ndarray] | None, timeout: float) -> ModelOutputs:
    """Run ``config``'s native runner once on ``device`` (``runner=native``): the inputs go
    in as raw files (the reference's, or the caller's written as a reference archive first),
    the outputs come back as raw tensors with a manifest, compared here as a Python runner's
    are. One process, no warm-up, one execution."""
    abi = abi_of(device.describe())
    with tempfile.TemporaryDirectory(prefix="benchlab-outputs-") as tmp:
        local = fetch_files(spec, test, cache)
        reference = (load_reference(local[f"files.{REFERENCE_KEY}"])
                     if REFERENCE_KEY in spec.model.files else None)
        if inputs is not None:
            # The runner reads the reference's inputs: the caller's become the reference,
            # keeping its outputs only when they were made from these same inputs.
            same = reference is not None and list(inputs) == list(reference.inputs) and all(
                np.array_equal(np.asarray(inputs[k]), reference.inputs[k]) for k in inputs)
            given = Path(tmp) / "inputs.npz"
            save_reference(given, {k: np.asarray(v) for k, v in inputs.items()},
                           reference.outputs if same and reference else [],
                           reference.task if reference else "")
            local[f"files.{REFERENCE_KEY}"] = given
            reference = load_reference(given)
        staging = Staging(spec=spec, test=test, config=config,
                          python=device.python_executable(), abi=abi, local_files=local,
                          scratch=Path(tmp), cache_root=cache.root,
                          arm_features=ArmFeatures(device).get)
        workdir = device.make_workdir(f"outputs-{spec.model.name}")
        try:
            files = {key: device.push(path, workdir, None) for key, path in local.items()}
            # The runner and its inputs; on a phone, the bundle it keeps between runs.
            made, _ = push_device_files(adapter, device, staging, workdir, {})
            if not made:
                raise InfrastructureError(f"{config} built no native runner for {device.name}")
            files.update(made)
            ctx = JobContext(spec=spec, test=test, config=config, workdir=workdir,
                             python=device.python_executable(), files=files, placeholders={},
                             runtime=runtime_of(adapter))
            invocation = adapter.invocations(ctx)[-1]
            done = device.run(RunRequest(argv=invocation.argv, env=invocation.env,
                                         cwd=workdir, timeout=timeout))
            if not done.ok:
                why = "timed out" if done.timed_out else f"exited {done.returncode}"
                tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
                raise InfrastructureError(f"{config} on {device.name} {why} running "
                                          f"{spec.model.name}:\n{tail}")
            got: dict[str, Path] = {}
            for name in invocation.pull:
                try:
                    got[name] = device.pull(posixpath.join(workdir, name), Path(tmp) / name)
                except InfrastructureError:
                    continue  # a name the runner did not write (fewer outputs)
        finally:
            device.remove_workdir(workdir)
        try:
            # The first input set's outputs: a runner that ran the reference's further sets
            # (ONNX Runtime's) names theirs set<k>.output<i>.
            arrays = [array for name, array in read_tensors(got[MANIFEST], got).items()
                      if not name.startswith("set")]
        except (KeyError, ValueError) as exc:
            raise InfrastructureError(f"{config} on {device.name}: the outputs do not read "
                                      f"({exc})") from None
    expected = reference.outputs if reference is not None and reference.outputs else None
    errors = error_stats(arrays, expected, reference.task if reference else "") if expected \
        else {}
    used = dict(reference.inputs) if reference is not None else {}
    return ModelOutputs(model=spec.model.name, framework=config, inputs=used, outputs=arrays,
                        reference=expected, errors=errors)


def _answers_without_python(device: Target, adapter: Framework, spec: BenchmarkSpec,
                            test: TestCase, config: FrameworkConfig, cache: ArtifactCache,
                            timeout: float | None) -> ModelOutputs:
    """A text generator's answers to its reference from a device without Python, through
    the native runner its framework builds (llama.cpp's): the prefill logits of the reference
    prompt as the output, the reference's as the reference, the scores as ``errors``."""
    stage = getattr(adapter, "device_files", None)
    refusal = UsageError(f"outputs() on target {device.name!r}, which has no Python, needs a "
                         f"framework that builds its own runner for it and a text generator "
                         f"with a reference (llamacpp and the zoo's decoders); "
                         f"{config.name} on {spec.model.name} is not that; or give the device "
                         "a Python (python=...)")
    if REFERENCE_KEY not in spec.model.files or stage is None:
        raise refusal
    # The runner times the test's generations before it answers; none of that comes back
    # here, so it times the shortest one (1 + 2 tokens) instead of the test's (llama_15m's
    # default, 128 + 64 twice, was 30% of the runner's time on an emulated phone). The
    # answers (the reference's prompt, continuation and text) do not depend on it.
    shortest = Generation(prompt_tokens=1, new_tokens=2)
    test = replace(test, generate=shortest if test.generate is None else replace(
        test.generate, prompt_tokens=1, new_tokens=2, depth=0))
    abi = abi_of(device.describe())
    with tempfile.TemporaryDirectory(prefix="benchlab-outputs-") as tmp:
        local = fetch_files(spec, test, cache)
        scratch, pulled = Path(tmp) / "stage", Path(tmp) / "pulled"
        scratch.mkdir()
        pulled.mkdir()
        made = stage(Staging(spec=spec, test=test, config=config, python="", abi=abi,
                             local_files=local, scratch=scratch, cache_root=cache.root,
                             progress=lambda text: None))
        if not made:
            raise refusal
        workdir = device.make_workdir(f"outputs-{spec.model.name}")
        try:
            files = {key: device.push(path, workdir, None) for key, path in
                     {**local, **made}.items()}
            ctx = JobContext(spec=spec, test=test, config=config, workdir=workdir, python="",
                             files=files, placeholders={}, runtime=runtime_of(adapter))
            invocation = adapter.invocations(ctx)[-1]
            done = device.run(RunRequest(
                argv=invocation.argv, env=invocation.env, cwd=workdir,
                timeout=timeout if timeout is not None else setting_info("timeout").default))
            if not done.ok:
                tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
                raise InfrastructureError(f"{config.name} on {device.name} failed running "
                                          f"{spec.model.name}:\n{tail}")
            got = {name: device.pull(posixpath.join(workdir, name), pulled / name)
                   for name in invocation.pull}
        finally:
            device.remove_workdir(workdir)
        reference = load_generative_reference(str(local[f"files.{REFERENCE_KEY}"]))
        try:
            arrays = read_tensors(got[MANIFEST], got)
        except (KeyError, ValueError) as exc:
            raise InfrastructureError(f"{config.name} on {device.name}: the outputs do not "
                                      f"read ({exc})") from None
    answers = ReferenceAnswers(arrays["forced_logits"], arrays["free_tokens"],
                               arrays["text_logprobs"])
    scores = score_answers(reference, answers, test.generate.compare_tokens)
    prompt = len(reference.prompt)
    return ModelOutputs(model=spec.model.name, framework=config,
                        inputs={"tokens": reference.prompt}, outputs=[answers.forced_logits[:prompt]],
                        reference=[reference.logits],
                        errors={str(metric): float(value) for metric, value in scores.items()})


def _run_on(device: Target, adapter: Framework, spec: BenchmarkSpec, test: TestCase,
            config: FrameworkConfig, local: dict[str, Path], tmp: Path,
            timeout: float) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Push the files, run the runner once with ``dump_outputs``, pull the dump and read it;
    the runner's details come along."""
    workdir = device.make_workdir(f"outputs-{spec.model.name}")
    try:
        # Files keep their names on the device: the runner finds the reference by its path.
        files = {key: device.push(path, workdir, None) for key, path in local.items()}
        ctx = JobContext(spec=spec, test=test, config=config, workdir=workdir,
                         python=device.python_executable(), files=files, placeholders={},
                         runtime=runtime_of(adapter))
        invocation = adapter.invocations(ctx)[-1]
        argv = list(invocation.argv)
        if argv[1:3] != ["-m", "benchlab.runner"]:
            raise UsageError(f"outputs() needs benchlab's runner; {config} runs a native "
                             "tool, which does not hand its outputs back")
        runner_config = json.loads(argv[-1])
        dump = posixpath.join(workdir, "outputs.npz")
        runner_config["dump_outputs"] = dump
        argv[-1] = json.dumps(runner_config)
        done = device.run(RunRequest(argv=argv, env=invocation.env, cwd=workdir,
                                     timeout=timeout))
        if not done.ok:
            why = "timed out" if done.timed_out else f"exited {done.returncode}"
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
            raise InfrastructureError(f"{config.name} on {device.name} {why} running "
                                      f"{spec.model.name}:\n{tail}")
        try:
            pulled = device.pull(dump, tmp / "outputs.npz")
        except (OSError, InfrastructureError) as exc:
            raise InfrastructureError(f"{config.name} on {device.name} wrote no outputs "
                                      f"({exc})") from exc
    finally:
        device.remove_workdir(workdir)
    details = parse_output(done.stdout).details
    with np.load(pulled) as archive:
        arrays = [archive[k] for k in sorted(archive.keys(), key=lambda k: int(k.split(".")[1]))]
    return arrays, details
