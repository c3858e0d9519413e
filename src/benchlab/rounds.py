"""How a stage's jobs take turns: in rounds, fixed or raced.

:func:`measure_in_rounds` runs a stage's jobs a process at a time. With a fixed design every
job gets its test's ``repeat`` processes, every job's first process, then every job's second,
and so on. With a :class:`~benchlab.race.RacePolicy`, the jobs are grouped into contests (one
model and test on one device: the cells whose "× fastest" ratios are compared), each contest is
measured in rounds until the race stops its every cell, and one contest follows another, so
each cell's result is recorded (and shown) as soon as it is decided rather than at the end of
the stage. :func:`benchlab.harness.execute` calls it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence

from benchlab.jobrun import Job, JobMeasurement
from benchlab.race import RacePolicy, decide_round
from benchlab.schema import Result

__all__ = ["Pace", "ProgressCallback", "contest_key", "measure_in_rounds"]

#: Called with a job when its next process starts, and with its result once it is in.
ProgressCallback = Callable[[Job, Result | None], None]


class Pace:
    """The pause a test asks for before each process (``cooldown``), never before the first."""

    def __init__(self) -> None:
        self._next = 0.0

    def wait(self) -> None:
        if self._next:
            time.sleep(self._next)

    def after(self, job: Job) -> None:
        self._next = job.test.cooldown or 0.0


def contest_key(job: Job) -> Hashable:
    """The cells whose latencies are compared with each other: one model's test on one
    device, whatever the backend."""
    identity = job.identity
    return (identity.model_name, identity.test_identifier, identity.target, identity.device)


def measure_in_rounds(
    jobs: Sequence[Job],
    measurement: Callable[[Job, bool], JobMeasurement],
    record: Callable[[Job, Result], None],
    progress: ProgressCallback | None,
    pace: Pace,
    race: RacePolicy | None = None,
) -> None:
    """Measure ``jobs`` a process per job per round until each job's result is in.

    ``measurement(job, raced)`` opens a job. A job that must keep its processes together (a
    power meter, host commands) runs whole, before the rounds. With ``race``, the jobs it
    takes (:meth:`RacePolicy.takes`, no target CI of their own) are raced contest by
    contest; the others keep the fixed design, in rounds, first. Each job is opened by its
    first process and closed when its result is recorded.
    """
    opened: list[JobMeasurement] = []
    try:
        fixed: list[JobMeasurement] = []
        contests: dict[Hashable, list[JobMeasurement]] = {}
        for job in jobs:
            raced = race is not None and race.takes(job.test.repeat) and job.test.target_ci is None
            job_measurement = measurement(job, raced)
            opened.append(job_measurement)
            if not job_measurement.interleavable:
                _take_turn(job_measurement, record, progress, pace, whole=True)
                continue
            if raced:
                contests.setdefault(contest_key(job), []).append(job_measurement)
            else:
                fixed.append(job_measurement)
        pending = fixed
        while pending:
            pending = [m for m in pending if _take_turn(m, record, progress, pace) is None]
        assert race is not None or not contests
        for contest in contests.values():
            _race(contest, race, record, progress, pace)  # type: ignore[arg-type]
    finally:
        for job_measurement in opened:
            job_measurement.close()


def _take_turn(job_measurement: JobMeasurement, record: Callable[[Job, Result], None],
               progress: ProgressCallback | None, pace: Pace, *,
               whole: bool = False) -> Result | None:
    """Run the job's next process (all of them with ``whole``); its result once it is in."""
    job = job_measurement.job
    pace.wait()
    if progress:
        progress(job, None)
    result = job_measurement.run() if whole else job_measurement.step()
    pace.after(job)
    if result is None:
        return None
    job_measurement.close()
    record(job, result)
    return result


def _race(contest: list[JobMeasurement], race: RacePolicy,
          record: Callable[[Job, Result], None], progress: ProgressCallback | None,
          pace: Pace) -> None:
    """One contest in rounds until the race stops each of its cells.

    A cell whose processes print no positive latency has nothing to race on: it keeps its
    turn in the rounds under its test's own rule (``repeat`` processes).
    """
    medians: dict[Hashable, Sequence[float]] = {}
    running = list(contest)
    unraced: set[str] = set()
    spent = 0
    while running:
        for job_measurement in list(running):
            if job_measurement not in running:  # stopped by a decision earlier in this round
                continue
            key = job_measurement.job.identity.key
            result = _take_turn(job_measurement, record, progress, pace)
            spent += 1
            now = job_measurement.process_medians()
            usable = bool(now) and min(now) > 0 and key not in unraced
            if result is not None:  # failed, or out of its time budget
                running.remove(job_measurement)
                if not (result.ok and usable):
                    medians.pop(key, None)
                    continue
            if usable:
                medians[key] = now
            elif key not in unraced:
                job_measurement.race_off()
                unraced.add(key)
                medians.pop(key, None)
            # Decided after every process, not at the round's end: a cell leaves (and is shown)
            # as soon as its answer is in.
            _conclude(running, unraced, medians, race, spent, record)


def _conclude(running: list[JobMeasurement], unraced: set[str],
              medians: dict[Hashable, Sequence[float]], race: RacePolicy, spent: int,
              record: Callable[[Job, Result], None]) -> None:
    """Stop and record the running cells the race decides to stop now."""
    # Cells yet to run their first process have nothing to judge.
    racing = [m.job.identity.key for m in running
              if m.job.identity.key not in unraced and m.job.identity.key in medians]
    standings = decide_round(medians, racing, race, spent)
    for job_measurement in list(running):
        standing = standings.get(job_measurement.job.identity.key)
        if standing is None:
            continue
        result = job_measurement.conclude(standing)
        job_measurement.close()
        record(job_measurement.job, result)
        running.remove(job_measurement)
