"""How a stage's jobs take turns: in rounds, fixed or raced.

:func:`measure_in_rounds` runs a stage's jobs a process at a time. With a fixed design every
job gets its test's ``repeat`` processes, every job's first process, then every job's second,
and so on. With a :class:`~benchlab.stats.race.RacePolicy` the rounds are the same, across every
cell of the stage (a drift of the machine falls on every cell alike), and after each process the
race looks at that cell's contest (one model and test on one device: the cells whose "×
fastest" ratios are compared) and stops the cells whose answer is in; each is recorded (and
shown) at once, and the rounds go on with the open ones. :func:`benchlab.harness.planner.execute`
calls it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence

from benchlab.harness.jobrun import Job, JobMeasurement
from benchlab.stats.race import RacePolicy, decide_round
from benchlab.schema.result import JobIdentity, Result

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


def contest_key(identity: JobIdentity) -> Hashable:
    """The cells whose latencies are compared with each other: one model's test on one
    device, whatever the backend."""
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
    takes (:meth:`RacePolicy.takes`, no target CI of their own) are raced: they share the
    rounds with the others, and after each of their processes the race decides, contest by
    contest, which of them have enough. Each job is opened by its first process and closed
    when its result is recorded.
    """
    opened: list[JobMeasurement] = []
    try:
        pending: list[JobMeasurement] = []
        contests: dict[Hashable, _Contest] = {}
        for job in jobs:
            raced = race is not None and race.takes(job.test.repeat) and job.test.target_ci is None
            job_measurement = measurement(job, raced)
            opened.append(job_measurement)
            if not job_measurement.interleavable:
                _take_turn(job_measurement, record, progress, pace, whole=True)
                continue
            pending.append(job_measurement)
            if raced:
                contests.setdefault(contest_key(job.identity), _Contest()).cells.append(job_measurement)
        by_cell = {id(m): c for c in contests.values() for m in c.cells}
        while pending:
            for job_measurement in list(pending):
                if job_measurement not in pending:  # the race stopped it this round
                    continue
                result = _take_turn(job_measurement, record, progress, pace)
                contest = by_cell.get(id(job_measurement))
                if result is not None:
                    pending.remove(job_measurement)
                if contest is not None:
                    assert race is not None, "only a race makes contests"
                    for ended in contest.after(job_measurement, result, race, record):
                        pending.remove(ended)
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


class _Contest:
    """The raced cells of one contest: their process medians, and what the race decides.

    A cell whose processes print no positive latency has nothing to race on: it leaves the
    race and runs its test's own ``repeat``.
    """

    def __init__(self) -> None:
        self.cells: list[JobMeasurement] = []
        self.medians: dict[Hashable, Sequence[float]] = {}
        self.unraced: set[str] = set()
        self.ended: set[str] = set()
        self.spent = 0

    def after(self, job_measurement: JobMeasurement, result: Result | None, race: RacePolicy,
              record: Callable[[Job, Result], None]) -> list[JobMeasurement]:
        """Take in a cell's latest process; end and record the cells the race stops now
        (decided after every process, so a cell is shown as soon as its answer is in)."""
        key = job_measurement.job.identity.key
        self.spent += 1
        now = job_measurement.process_medians()
        usable = bool(now) and min(now) > 0 and key not in self.unraced
        if result is not None:  # failed, or out of its time budget: its own result
            self.ended.add(key)
            if not (result.ok and usable):
                self.medians.pop(key, None)
                return []
        if usable:
            self.medians[key] = now
        elif key not in self.unraced:
            job_measurement.race_off()
            self.unraced.add(key)
            self.medians.pop(key, None)
        running = [m for m in self.cells if m.job.identity.key not in self.ended]
        # Cells yet to run their first process have nothing to judge.
        racing = [m.job.identity.key for m in running
                  if m.job.identity.key not in self.unraced and m.job.identity.key in self.medians]
        standings = decide_round(self.medians, racing, race, self.spent)
        stopped = []
        for cell in running:
            standing = standings.get(cell.job.identity.key)
            if standing is None:
                continue
            stopped_result = cell.conclude(standing)
            cell.close()
            record(cell.job, stopped_result)
            self.ended.add(cell.job.identity.key)
            stopped.append(cell)
        return stopped
