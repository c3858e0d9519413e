"""The runner's configuration, validated at the process boundary."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from benchlab.schema.scenario import Scenario
from benchlab.schema.settings import setting_info

__all__ = ["GENERATION_LOOPS", "GenerateConfig", "InputConfig", "RunnerConfig"]

#: Who runs a generation's loop on an LLM library (option ``loop``): the library itself
#: (``library``, its own per-token call or ``generate``) or benchlab (``benchlab``: a forward
#: per step and an argmax over the logits, as on the runtimes without a loop of their own).
GENERATION_LOOPS = ("library", "benchlab")


def _setting(name: str) -> Any:
    """A field carrying the test setting ``name``: its default and bounds from benchlab.schema.settings."""
    info = setting_info(name)
    return Field(info.default, description=info.described, **info.bounds)


class InputConfig(BaseModel):
    """One model input to synthesise: its name, shape and dtype."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    shape: list[int]
    dtype: str = "float32"


class GenerateConfig(BaseModel):
    """A generative test's workload (:class:`benchlab.schema.generation.Generation`'s wire form)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = Field(ge=1)
    new_tokens: int = Field(ge=2)
    depth: int = Field(0, ge=0)
    compare_tokens: int = Field(32, ge=1)


class RunnerConfig(BaseModel):
    """What one runner process measures and how (sent by the harness as one JSON argument)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: str = Field(description="module:Class of the runtime backend to load")
    runtime: str | None = Field(None, description="the pip distribution of the runtime the "
                                "backend drives, whose loaded libraries are its code size")
    runtime_module: str | None = Field(None, description="the runtime's import name (its "
                                       "framework's requires), named when it is missing")
    model_path: str | None = None
    entry: str | None = None
    inputs: list[InputConfig] = Field(default_factory=list)
    warmup: int = _setting("warmup")
    iterations: int = _setting("iter")
    min_time: float = _setting("min_time")
    max_time: float | None = _setting("max_time")
    target_ci: float | None = _setting("target_ci")
    threads: int | None = _setting("threads")
    profile_ops: bool = _setting("profile_ops")
    count: str | None = _setting("count")
    layer_errors: bool = _setting("layer_errors")
    delegation: bool = Field(
        True, description="report what the delegate or execution provider took (a job asks "
        "its first process only: the answer is the same in every one)"
    )
    profile_iterations: int = Field(10, ge=1)
    seed: int = 0
    options: dict[str, Any] = Field(default_factory=dict)
    extra_files: dict[str, str] = Field(
        default_factory=dict, description="other files the backend needs (OpenVINO weights)"
    )
    reference: str | None = Field(
        None, description="reference .npz: inputs to feed and the outputs to compare against"
    )
    simulated_reference: str | None = Field(
        None, description="outputs of the quantization recipe run exactly (.npz, the reference's "
        "layout): splits the error into quantization and lowering"
    )
    layer_reference: str | None = Field(
        None, description="the model whose intermediate outputs the layer table compares with "
        "(default: the backend's own choice, e.g. the eager model)"
    )
    generate: GenerateConfig | None = Field(
        None, description="time generations of this workload instead of forward passes "
        "(benchlab.runner.generate); the backend is then a generative one"
    )
    scenario: Scenario | None = Field(
        None, description="run this load scenario under MLPerf LoadGen instead of benchlab's "
        "loop (benchlab.runner.scenario)"
    )
    dump_outputs: str | None = Field(
        None, description="write the last call's outputs to this .npz (the outputs API)"
    )
    shutdown_limit: float | None = Field(
        60.0, gt=0, description="seconds the runtime's teardown may take once the results are "
        "printed; then SIGALRM ends the process and the harness keeps the results "
        "(benchlab.runner.shutdown); None: no bound. A counted process has none"
    )

    def model_file(self, needed: str) -> str:
        """The path of the model file; ``ValueError(needed)`` when the job gave none (a
        backend that loads a file says what file it needs)."""
        if not self.model_path:
            raise ValueError(needed)
        return self.model_path

    def extra_file(self, key: str, needed: str) -> str:
        """The path of the model's ``key`` file beside it (a GenAI config, an IR's weights);
        ``ValueError(needed)`` when the job gave none."""
        path = self.extra_files.get(key)
        if not path:
            raise ValueError(needed)
        return path

