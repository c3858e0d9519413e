"""The runner's configuration, validated at the process boundary."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["InputConfig", "RunnerConfig"]


class InputConfig(BaseModel):
    """One model input to synthesise: its name, shape and dtype."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    shape: list[int]
    dtype: str = "float32"


class RunnerConfig(BaseModel):
    """What one runner process measures and how (sent by the harness as one JSON argument)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: str = Field(description="module:Class of the runtime backend to load")
    model_path: str | None = None
    entry: str | None = None
    inputs: list[InputConfig] = Field(default_factory=list)
    warmup: int = Field(1, ge=0)
    iterations: int = Field(10, ge=1)
    min_time: float = Field(0.0, ge=0)
    max_time: float | None = Field(None, gt=0)
    target_ci: float | None = Field(None, gt=0)
    threads: int | None = Field(None, ge=1)
    profile_ops: bool = False
    profile_iterations: int = Field(10, ge=1)
    seed: int = 0
    options: dict[str, Any] = Field(default_factory=dict)
    extra_files: dict[str, str] = Field(
        default_factory=dict, description="other files the backend needs (OpenVINO weights)"
    )
    reference: str | None = Field(
        None, description="reference .npz: inputs to feed and the outputs to compare against"
    )
    dump_outputs: str | None = Field(
        None, description="write the last call's outputs to this .npz (the outputs API)"
    )
