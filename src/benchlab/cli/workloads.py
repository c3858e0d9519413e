"""What the ``run`` command's workload options ask for: the text generators' grid
(``--prompt-tokens``, ``--new-tokens``, ``--depth``) and a load scenario (``--scenario`` and
its settings), each a library value or a :class:`~benchlab.errors.UsageError` in words."""

from __future__ import annotations

from typing import Any

from benchlab.errors import UsageError

__all__ = ["generations_from_options", "scenario_from_options"]


def generations_from_options(prompt_tokens: str | None, new_tokens: int | None,
                 depth: str | None) -> tuple[Any, ...]:
    """The workloads ``--prompt-tokens``, ``--new-tokens`` and ``--depth`` ask for."""
    from benchlab.schema.generation import generation_grid

    def numbers(text: str | None, option: str) -> tuple[int, ...]:
        try:
            return tuple(int(t) for t in (text or "").split(",") if t.strip())
        except ValueError:
            raise UsageError(f"{option} takes whole numbers, comma-separated: {text!r}") \
                from None

    try:
        return generation_grid(numbers(prompt_tokens, "--prompt-tokens"), new_tokens,
                               numbers(depth, "--depth"))
    except ValueError as why:
        raise UsageError(str(why)) from None


def scenario_from_options(name: str | None, latency_bound: str | None, target_qps: float | None,
              duration: float | None, query_count: int | None, samples_per_query: int | None,
              mlperf_durations: bool, accuracy: bool, ttft_bound: str | None = None,
              tpot_bound: str | None = None) -> Any:
    """The load scenario ``--scenario`` and its settings ask for (``None`` without one)."""
    from benchlab.schema.scenario import DEFAULT_DURATION_S, Scenario, parse_milliseconds

    given = {"--latency-bound": latency_bound, "--target-qps": target_qps,
             "--duration": duration, "--query-count": query_count,
             "--samples-per-query": samples_per_query,
             "--mlperf-durations": mlperf_durations or None,
             "--scenario-accuracy": accuracy or None,
             "--ttft-bound": ttft_bound, "--tpot-bound": tpot_bound}
    if name is None:
        stray = [option for option, value in given.items() if value is not None]
        if stray:
            raise UsageError(f"{', '.join(stray)} set a load scenario's settings: give "
                             "--scenario too")
        return None

    def ms(text: str | None) -> float | None:
        return None if text is None else parse_milliseconds(text)

    try:
        return Scenario(name, duration_s=DEFAULT_DURATION_S if duration is None else duration,
                        query_count=query_count, latency_bound_ms=ms(latency_bound),
                        target_qps=target_qps, samples_per_query=samples_per_query,
                        mlperf_durations=mlperf_durations, accuracy=accuracy,
                        ttft_bound_ms=ms(ttft_bound), tpot_bound_ms=ms(tpot_bound))
    except ValueError as why:
        raise UsageError(f"--scenario {name}: {why}") from None
