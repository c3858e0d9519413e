"""The generative workload: what one generation does, the same on every runtime.

A test with ``generate`` measures text generation instead of one forward pass: batch 1, a
prompt of ``prompt_tokens`` synthetic tokens, then ``new_tokens`` tokens chosen greedily (the
most likely one, never an early stop), so every generation does exactly the same work. With
``depth`` the key/value cache is first filled with that many tokens, untimed, as
``llama-bench -d`` does: the figures are then those of a conversation already that long.

The metrics and their definitions are :class:`benchlab.schema.result.Metric`'s generation members
(``ttft``, ``tpot``, ``inter_token_latency``, ``prefill_rate``, ``decode_rate``) and
docs/generative.md. Standard library only: the runner imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DEFAULT_GENERATION", "Generation", "generation_grid"]


@dataclass(frozen=True, slots=True)
class Generation:
    """One generative workload: prompt length P, new tokens G, context depth D.

    ``compare_tokens`` is how many greedy tokens the accuracy check compares with the
    reference's (at most what the reference holds).
    """

    prompt_tokens: int
    new_tokens: int
    depth: int = 0
    compare_tokens: int = 32

    def __post_init__(self) -> None:
        if self.prompt_tokens < 1:
            raise ValueError(f"prompt_tokens must be at least 1, got {self.prompt_tokens}")
        if self.new_tokens < 2:
            # TPOT is the time per token after the first: it needs a second token.
            raise ValueError(f"new_tokens must be at least 2, got {self.new_tokens}")
        if self.depth < 0:
            raise ValueError(f"depth must be at least 0, got {self.depth}")
        if self.compare_tokens < 1:
            raise ValueError(f"compare_tokens must be at least 1, got {self.compare_tokens}")

    @property
    def context(self) -> int:
        """Positions the cache holds at the end of a generation."""
        return self.depth + self.prompt_tokens + self.new_tokens

    @property
    def label(self) -> str:
        """``p128 g64 d0``: how reports and identifiers name it (llama-bench's words)."""
        return f"p{self.prompt_tokens} g{self.new_tokens} d{self.depth}"

    def to_wire(self) -> dict[str, int]:
        """The runner's JSON form."""
        return {"prompt_tokens": self.prompt_tokens, "new_tokens": self.new_tokens,
                "depth": self.depth, "compare_tokens": self.compare_tokens}


#: What a generative zoo model measures unless told otherwise: MLPerf Client and
#: llama-bench's default text-generation length is 128; P = 128, G = 64 is the issue's
#: reporting point (docs/performance.md).
DEFAULT_GENERATION = Generation(prompt_tokens=128, new_tokens=64)


def generation_grid(prompt_tokens: Sequence[int] = (), new_tokens: int | None = None,
                    depth: Sequence[int] = ()) -> tuple[Generation, ...]:
    """One workload per (prompt length, depth) pair, what is not given taken from
    :data:`DEFAULT_GENERATION`; empty when nothing is given (the models' own defaults).
    ``ValueError`` for an impossible value."""
    if not prompt_tokens and new_tokens is None and not depth:
        return ()
    return tuple(Generation(prompt_tokens=p,
                            new_tokens=DEFAULT_GENERATION.new_tokens if new_tokens is None
                            else new_tokens, depth=d)
                 for p in (prompt_tokens or (DEFAULT_GENERATION.prompt_tokens,))
                 for d in (depth or (DEFAULT_GENERATION.depth,)))

