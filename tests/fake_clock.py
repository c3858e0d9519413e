"""A fake monotonic clock for tests of code that polls and sleeps."""

from __future__ import annotations


class FakeClock:
    """``clock()`` reads the time; ``clock.sleep(s)`` advances it instead of waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
