"""bench/process_accounting.py: the kernel's records read back, and each process charged to the
test it ran beside, on records written here in the kernel's own layout (no root needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
WORKER = 1000


@pytest.fixture(scope="module")
def acct() -> Any:
    spec = importlib.util.spec_from_file_location("process_accounting",
                                                  BENCH / "process_accounting.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _comp_t(ticks: int) -> int:
    """The kernel's encoding (13-bit mantissa, base-8 exponent), rounding down as it does."""
    exponent = 0
    while ticks > 0x1FFF:
        ticks >>= 3
        exponent += 1
    return (exponent << 13) | ticks


def _record(acct: Any, pid: int, ppid: int, started: int, wall_s: float, cpu_s: float,
            command: bytes = b"python") -> bytes:
    user = int(round(cpu_s * 100 * 0.75))
    system = int(round(cpu_s * 100)) - user
    return acct.RECORD.pack(0, 3, 0, 0, 0, 0, pid, ppid, started, wall_s * 100,
                            _comp_t(user), _comp_t(system), 0, 0, 0, 0, 0, 0, command)


def test_records_read_back_with_their_times_and_names(acct: Any, tmp_path: Path) -> None:
    path = tmp_path / "p.acct"
    old_kernel = b"\x00\x02" + b"\x00" * 62  # a v2 record: skipped, not misread
    path.write_bytes(_record(acct, 7, 1, 100, 2.5, 123.45, b"qemu-aarch64") + old_kernel
                     + _record(acct, 8, 7, 101, 0.01, 0.0, b"sh"))
    first, second = acct.read_records(path)
    assert (first.pid, first.ppid, first.started, first.command) == (7, 1, 100.0,
                                                                       "qemu-aarch64")
    assert first.wall_s == pytest.approx(2.5)
    # 12,345 ticks need the exponent: the encoding keeps 13 bits, so 0.1% of it is lost.
    assert first.cpu_s == pytest.approx(123.45, rel=2e-3)
    assert second.command == "sh" and second.cpu_s == 0.0


def test_each_process_goes_to_the_test_it_ran_beside_longest(acct: Any) -> None:
    windows = [acct.TestWindow("t.py::quick", WORKER, 100.2, 101.0),
               acct.TestWindow("t.py::exports", WORKER, 101.0, 160.0),
               acct.TestWindow("u.py::other", 2000, 100.0, 200.0)]
    records = [
        acct.ProcessRecord(WORKER, 1, 99.0, 110.0, 30.0, "python"),  # the worker itself
        # Started within the quick test's second, ran through the next test: the next one's.
        acct.ProcessRecord(11, WORKER, 101.0, 55.0, 36.0, "python"),
        # A quick child of the quick test, and its own child (charged through its parent).
        acct.ProcessRecord(12, WORKER, 100.0, 0.5, 1.0, "python"),
        acct.ProcessRecord(13, 12, 100.0, 0.2, 2.0, "flatc"),
        # A daemon's process (its parent is no worker's descendant): nobody's test.
        acct.ProcessRecord(14, 1, 120.0, 5.0, 4.0, "sshd"),
    ]
    charged = acct.charge(records, windows)
    assert charged.per_test == {"t.py::exports": 36.0, "t.py::quick": 3.0}
    assert charged.workers_s == 30.0 and charged.unowned_s == 4.0
    assert charged.total_s == 30.0 + 36.0 + 3.0 + 4.0
    assert charged.per_command == {"python": 37.0, "flatc": 2.0, "sshd": 4.0}
    assert acct.module_totals(charged.per_test) == {"t.py": 39.0}


def test_a_pid_that_came_back_belongs_to_its_later_process(acct: Any) -> None:
    windows = [acct.TestWindow("a.py::first", WORKER, 100.0, 110.0),
               acct.TestWindow("b.py::later", WORKER, 300.0, 310.0)]
    records = [
        acct.ProcessRecord(50, 1, 90.0, 5.0, 1.0, "postgres"),  # pid 50, a daemon, long gone
        acct.ProcessRecord(50, WORKER, 300.0, 9.0, 2.0, "python"),  # pid 50 again, the test's
        acct.ProcessRecord(51, 50, 301.0, 1.0, 5.0, "python"),
    ]
    charged = acct.charge(records, windows)
    assert charged.per_test == {"b.py::later": 7.0}
    assert charged.unowned_s == 1.0
