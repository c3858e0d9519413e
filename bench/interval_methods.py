"""Which next-run interval is narrow and still holds the next run's median?

Re-reads the JSON directories of back-to-back identical runs (``bench/repeatability.py --keep``)
and, for every cell and every number of processes k (the cell's first k), computes the interval
each candidate method gives from run i and checks whether it holds run i+1's p50 (the pooled
median of that run's first k processes, as benchlab reports it). Prints coverage and the median
half-width per method and k. The methods:

* ``t_sd``: ``p50 · exp(± t(k−1) · s · √(2/k))``, s the standard deviation of the log process
  medians (benchlab's interval before the race);
* ``boot``: the process bootstrap of the pooled median, enumerated exactly over every
  multiset of k processes (deterministic), its log standard deviation corrected by √(k/(k−1)),
  ``± t(k−1) · √2 · sd``;
* ``t_mad``: as ``t_sd`` with s = 1.4826 · MAD of the log process medians, times √(π/2) for
  a median's efficiency;

Usage: ``bench/interval_methods.py DIR/run0 DIR/run1 ... [--ks 3 5 8]``; writes
``bench/results/interval_methods.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result  # noqa: E402

from benchlab.stats.race import RacePolicy, decide_round  # noqa: E402
from benchlab.stats.runstats import t_quantile  # noqa: E402
from benchlab.schema.result import LATENCY_KEY  # noqa: E402


def _median_bootstrap_pmf(k: int) -> list[tuple[int, int, float]]:
    """The exact bootstrap distribution of the median of k values, by order statistics.

    A resample draws k values from the k sorted values x_1 <= ... <= x_k, each uniformly
    with replacement; its median is x_a (odd k) or (x_a + x_b) / 2 (even k: the two middle
    values). Returns ``(a, b, probability)`` triples (a = b for odd k), 1-based. The count of
    drawn values at or below x_j is Binomial(k, j/k) (trinomial for two thresholds), so the
    distribution is exact without enumerating resamples (Maritz & Jarrett 1978 for odd k).
    """
    def at_least(j: int, m: int) -> float:
        p = j / k
        return sum(math.comb(k, n) * p ** n * (1 - p) ** (k - n) for n in range(m, k + 1))

    if k % 2:
        m = (k + 1) // 2
        cdf = [at_least(j, m) for j in range(k + 1)]
        return [(j, j, cdf[j] - cdf[j - 1]) for j in range(1, k + 1) if cdf[j] > cdf[j - 1]]
    m = k // 2

    def joint(a: int, b: int) -> float:
        """P(m-th drawn value <= x_a and (m+1)-th <= x_b)."""
        if a <= 0 or b <= 0:
            return 0.0
        if a >= b:
            return at_least(b, m + 1)
        pa, pb, rest = a / k, (b - a) / k, (k - b) / k
        total = 0.0
        for na in range(m, k + 1):
            for nb in range(max(m + 1, na), k + 1):
                total += (math.comb(k, na) * math.comb(k - na, nb - na)
                          * pa ** na * pb ** (nb - na) * rest ** (k - nb))
        return total

    out = []
    for a in range(1, k + 1):
        for b in range(a, k + 1):
            mass = joint(a, b) - joint(a - 1, b) - joint(a, b - 1) + joint(a - 1, b - 1)
            if mass > 1e-15:
                out.append((a, b, mass))
    return out


def process_bootstrap_sd(process_values: Sequence[Sequence[float]]) -> float:
    """The standard deviation of the log median of the process medians over every resample of
    the processes (the bootstrap with the process as the unit, computed exactly).

    One odd process moves a median of process medians only when a resample draws it into the
    middle, so this spread, unlike the standard deviation of the process medians, is not blown
    up by one process the machine disturbed. 0 with fewer than two processes.
    """
    medians = np.sort(np.log([float(np.median(v)) for v in process_values if len(v)]))
    k = medians.size
    if k < 2:
        return 0.0
    pmf = _median_bootstrap_pmf(k)
    values = np.array([(medians[a - 1] + medians[b - 1]) / 2 for a, b, _ in pmf])
    weights = np.array([w for _, _, w in pmf])
    weights = weights / weights.sum()
    mean = float(np.dot(weights, values))
    return math.sqrt(max(float(np.dot(weights, (values - mean) ** 2)), 0.0))


def _cells(run: Path) -> dict[str, list[np.ndarray]]:
    """label -> per-process latency arrays, in process order."""
    out: dict[str, list[np.ndarray]] = {}
    for path in sorted(run.rglob("*.json")):
        result = json.loads(path.read_text())
        if result.get("status") != "ok":
            continue
        ident = result["identity"]
        label = f"{ident['model_name']}/{ident['test_identifier']} @ {ident['framework']}" + (
            json.dumps(ident["framework_config"], sort_keys=True)
            if ident["framework_config"] else "")
        by: dict[int, list[float]] = {}
        for s in result["samples"]:
            if f"{s['type']} {s['metric']}" == LATENCY_KEY:
                by.setdefault(s["repetition"], []).append(s["value"])
        if by:
            out[label] = [np.asarray(by[r], dtype=float) for r in sorted(by)]
    return out


def _t_sd(parts: Sequence[np.ndarray], center: float) -> float:
    logs = np.log([np.median(p) for p in parts])
    k = len(logs)
    return t_quantile(0.975, k - 1) * float(np.std(logs, ddof=1)) * math.sqrt(2 / k)


def _t_mad(parts: Sequence[np.ndarray], center: float) -> float:
    logs = np.log([np.median(p) for p in parts])
    k = len(logs)
    mad = 1.4826 * float(np.median(np.abs(logs - np.median(logs))))
    return t_quantile(0.975, k - 1) * mad * math.sqrt(math.pi / 2) * math.sqrt(2 / k)


def _boot(parts: Sequence[np.ndarray], center: float) -> float:
    k = len(parts)
    sd = process_bootstrap_sd(parts) * math.sqrt(k / (k - 1))
    return t_quantile(0.975, k - 1) * math.sqrt(2) * sd


METHODS: dict[str, Callable[[Sequence[np.ndarray], float], float]] = {
    "t_sd": _t_sd, "boot": _boot, "t_mad": _t_mad}


def analyse(runs: Sequence[Path], ks: Sequence[int]) -> dict[str, Any]:
    data = [_cells(run) for run in runs]
    table: dict[str, Any] = {}
    for k in ks:
        for name, method in METHODS.items():
            hits, widths = 0, []
            compared = 0
            for before, after in zip(data, data[1:], strict=False):
                for label, parts in before.items():
                    if label not in after or len(parts) < k or len(after[label]) < k:
                        continue
                    mine = parts[:k]
                    centre = float(np.median(np.concatenate(mine)))
                    nxt = float(np.median(np.concatenate(after[label][:k])))
                    half = method(mine, centre)
                    widths.append(math.expm1(half))
                    hits += abs(math.log(nxt / centre)) <= half
                    compared += 1
            if compared:
                table[f"{name}@k={k}"] = {
                    "coverage": hits / compared, "compared": compared,
                    "median_halfwidth": float(np.median(widths)),
                    "quartiles": [float(np.percentile(widths, 25)),
                                  float(np.percentile(widths, 75))]}
    return table


def simulate_race(runs: Sequence[Path], policy: RacePolicy) -> dict[str, Any]:
    """The race replayed on fixed-design runs: each contest's cells take their recorded
    processes in order until :func:`benchlab.stats.race.decide_round` stops them (or the recorded
    processes run out). Returns the processes it would have spent against the fixed design's,
    and the half-widths (of the interval benchlab prints) at the stopping points."""
    spent_total = fixed_total = 0
    widths: list[float] = []
    reasons: dict[str, int] = {}
    for run in runs:
        cells = _cells(run)
        contests: dict[str, list[str]] = {}
        for label in cells:
            contests.setdefault(label.split(" @ ")[0], []).append(label)
        for members in contests.values():
            available = {m: [float(np.median(p)) for p in cells[m]] for m in members}
            fixed_total += sum(len(v) for v in available.values())
            taken = {m: 0 for m in members}
            running = list(members)
            spent = 0
            while running:
                for m in list(running):
                    if taken[m] >= len(available[m]):
                        running.remove(m)
                        reasons["recorded processes ran out"] = reasons.get(
                            "recorded processes ran out", 0) + 1
                        widths.append(_width(cells[m][:taken[m]]))
                        continue
                    taken[m] += 1
                    spent += 1
                contest = {m: available[m][:taken[m]] for m in members}
                for m, standing in decide_round(contest, running, policy, spent).items():
                    running.remove(m)
                    reasons[standing.reason.value] = reasons.get(standing.reason.value, 0) + 1
                    widths.append(_width(cells[m][:taken[m]]))
            spent_total += spent
    widths.sort()
    return {"processes": spent_total, "fixed_processes": fixed_total,
            "median_halfwidth": widths[len(widths) // 2] if widths else None,
            "stop_reasons": reasons}


def _width(parts: Sequence[np.ndarray]) -> float:
    from benchlab.stats.summary import summarize

    summary = summarize(list(np.concatenate(parts)), "ms", segments=[list(p) for p in parts])
    return summary.ci_rel_halfwidth


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--ks", nargs="+", type=int, default=[3, 4, 5, 6, 8])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.smoke, args.repeats = False, len(args.runs)
    table = analyse(args.runs, args.ks)
    print(f"{'method@k':<14} {'coverage':>9} {'compared':>9} {'median ±':>9} {'quartiles':>16}")
    for key, row in table.items():
        q = row["quartiles"]
        print(f"{key:<14} {row['coverage']:9.1%} {row['compared']:9d} "
              f"{row['median_halfwidth']:9.1%} [{q[0]:6.1%}, {q[1]:6.1%}]")
    for extra in (0.0, 0.5, 1.0):
        race = simulate_race(args.runs, RacePolicy(extra=extra))
        table[f"race_extra_{extra}"] = race
        print(f"race, extra {extra}: {race['processes']} processes (fixed design "
              f"{race['fixed_processes']}), median ±{race['median_halfwidth']:.1%}, "
              f"{race['stop_reasons']}")
    write_result("interval_methods", args, table)


if __name__ == "__main__":
    main()
