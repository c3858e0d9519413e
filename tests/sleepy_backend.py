"""A forward-pass backend whose every call sleeps ``service_ms`` (an option, default 2): a
known service time for the load-scenario tests, in this process and (from PYTHONPATH) in
runner processes. Its outputs are its input."""

from __future__ import annotations

import time
from typing import Any

import numpy as np


class SleepyBackend:
    def __init__(self, config: Any) -> None:
        self.service_s = float(config.options.get("service_ms", 2.0)) / 1e3
        self.inputs: dict[str, np.ndarray] = {}

    def load(self) -> None:
        pass

    def input_specs(self) -> list[Any]:
        from benchlab.runner.config import InputConfig

        return [InputConfig(name="x", shape=[1, 4])]

    def prepare(self, inputs: dict[str, np.ndarray]) -> Any:
        self.inputs = inputs
        return lambda: time.sleep(self.service_s)

    def outputs(self) -> list[np.ndarray]:
        return [next(iter(self.inputs.values()))]

    def extra_metrics(self) -> dict[str, tuple[float, str]]:
        return {}

    def info(self) -> dict[str, Any]:
        return {}


class SleepyDecoder:
    """A generative backend whose prompt sleeps ``prefill_ms`` and every later token
    ``token_ms`` (options, defaults 3 and 1): known token latencies for the generative
    load-scenario tests. Its logits put the next token at (last + 1) mod its vocabulary."""

    VOCAB = 64

    def __init__(self, config: Any) -> None:
        self.prefill_s = float(config.options.get("prefill_ms", 3.0)) / 1e3
        self.token_s = float(config.options.get("token_ms", 1.0)) / 1e3

    def load(self) -> None:
        pass

    def vocab_size(self) -> int:
        return self.VOCAB

    def reset(self) -> None:
        pass

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        time.sleep(self.prefill_s if len(tokens) > 1 else self.token_s)
        logits = np.zeros((len(tokens), self.VOCAB), dtype=np.float32)
        logits[np.arange(len(tokens)), (np.asarray(tokens) + 1) % self.VOCAB] = 1.0
        return logits if all_logits else logits[-1]

    def info(self) -> dict[str, Any]:
        return {}


class SleepyBatchingDecoder(SleepyDecoder):
    """:class:`SleepyDecoder` over ``sequences`` sequences (option, default 4): a batched step
    sleeps once, ``prefill_ms`` when it holds a prompt, else ``token_ms``, however many
    sequences it carries. It checks what a continuous-batching server must get right: every
    token fed to a sequence is the one that sequence chose last (the logits' next token),
    and only after its prompt; :meth:`info` says how many sequences the widest step held."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.count = int(config.options.get("sequences", 4))
        self.expected: dict[int, int | None] = {}
        self.widest = 0

    def sequences(self) -> int:
        return self.count

    def batch_tokens(self) -> int:
        return 512

    def reset_sequence(self, sequence: int) -> None:
        self.expected[sequence] = None

    def forward_batch(self, feeds: list[tuple[int, np.ndarray]]) -> list[np.ndarray]:
        time.sleep(self.prefill_s if any(len(t) > 1 for _, t in feeds) else self.token_s)
        self.widest = max(self.widest, len(feeds))
        rows = []
        for sequence, tokens in feeds:
            want = self.expected.get(sequence, "never reset")
            if len(tokens) == 1 and tokens[0] != want:
                raise AssertionError(f"sequence {sequence} was fed {tokens[0]}, not {want}")
            row = np.zeros(self.VOCAB, dtype=np.float32)
            self.expected[sequence] = (int(tokens[-1]) + 1) % self.VOCAB
            row[self.expected[sequence]] = 1.0
            rows.append(row)
        return rows

    def info(self) -> dict[str, Any]:
        return {"widest_step": self.widest}


class HangingTeardownBackend(SleepyBackend):
    """:class:`SleepyBackend` whose process hangs on its way out, after the runner printed its
    results, as a runtime whose thread pool never joins would: an exit handler waits an hour."""

    def load(self) -> None:
        import atexit

        atexit.register(time.sleep, 3600)
