"""One sweep on several devices: the host, the loopback ssh board and two stand-in phones
behind one real adb server; ``adb`` alone fans out to every phone, ``--exclude-target`` drops
one, results land per device in the store and the reports set the devices side by side."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from bounded import run_bounded

import benchlab
from benchlab.errors import UsageError
from benchlab.store import open_store
from benchlab.targets.reboot import RebootPolicy
from benchlab.harness.selection import select_targets
from benchlab_standin import StandinPhone
from benchlab_standin.adbserver import AdbServer
from benchlab_standin.board import LoopbackBoard
from benchlab_standin.profile import DeviceProfile

pytestmark = pytest.mark.slow

METRIC = ("echo 'BENCHLAB_METRIC {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\","
          "\"value\":1.5}'")


@pytest.fixture(scope="module")
def two_phones(phone: tuple[StandinPhone, AdbServer], tmp_path_factory: pytest.TempPathFactory,
               ) -> Iterator[tuple[StandinPhone, StandinPhone, AdbServer]]:
    """The module's stand-in phone plus a second model on the same adb server."""
    first, server = phone
    profile = DeviceProfile(model="Standin Two", serialno="STANDIN0002")
    with StandinPhone(tmp_path_factory.mktemp("phone2") / "device", profile=profile) as second:
        server.connect(second.serial)
        yield first, second, server
        server.disconnect(second.serial)


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({
        "model": {"name": "shell", "format": "generic"},
        "tests": [{"identifier": name, "repeat": 1, "timeout": 60, "commands": [METRIC]}
                  for name in ("one", "two")],
    }))
    return path


def test_adb_alone_fans_out_to_every_phone_and_exclusions_drop_devices(
    two_phones: tuple[StandinPhone, StandinPhone, AdbServer],
) -> None:
    first, second, server = two_phones
    every = select_targets(f"adb:server_port={server.port}")
    assert sorted(t.serial for t in every) == sorted([first.serial, second.serial])
    kept = select_targets(["host", f"adb:server_port={server.port}"],
                          exclude=[f"adb:serial={second.serial}"])
    assert [t.name for t in kept] == ["host", "adb"] and kept[1].serial == first.serial
    by_model = select_targets(f"adb:server_port={server.port}", exclude=["adb:model=Standin Two"])
    assert [t.serial for t in by_model] == [first.serial]
    with pytest.raises(UsageError, match="excluded"):
        select_targets("host", exclude=["host"])
    with pytest.raises(UsageError, match="given twice"):
        select_targets(["host", "host"])


def test_one_run_measures_every_job_on_every_device_side_by_side(
    tmp_path: Path, board: LoopbackBoard,
    two_phones: tuple[StandinPhone, StandinPhone, AdbServer],
) -> None:
    first, second, server = two_phones
    targets = ["host", f"{board.target_text},python={sys.executable}",
               f"adb:server_port={server.port}"]
    results = benchlab.run(_spec(tmp_path), target=targets,
                           exclude_targets=[f"adb:serial={second.serial}"],
                           db=tmp_path / "r.db", cache_dir=tmp_path / "c",
                           reboot=RebootPolicy(before_run=True))
    assert [r.status.value for r in results] == ["ok"] * 6
    labels = [r.identity.device_label for r in results]
    assert len(set(labels)) == 3 and not any(second.serial in label for label in labels)
    # Job by job, each on every device in turn.
    assert [r.identity.test_identifier for r in results] == ["one"] * 3 + ["two"] * 3
    assert labels[:3] == labels[3:]
    for result in results:  # each result describes the device it ran on
        assert result.environment["hostname"] == result.identity.device
        assert result.environment.get("target", "host") == result.identity.target
    # The phone rebooted before its first job; the host and the board cannot and did not.
    rebooted = [r.identity.target for r in results if "reboot" in r.details]
    assert rebooted == ["adb"]
    with open_store(tmp_path / "r.db") as store:
        stored = store.results(results.run_id)
    assert sorted(r.identity.device_label for r in stored) == sorted(labels)


def test_cli_repeats_target_and_prints_the_spread(
    tmp_path: Path, board: LoopbackBoard,
    two_phones: tuple[StandinPhone, StandinPhone, AdbServer],
) -> None:
    _, second, server = two_phones
    html = tmp_path / "report.html"
    out = run_bounded(
        [sys.executable, "-m", "benchlab", "run", str(_spec(tmp_path)), "-q",
         "--target", "host", "--target", f"adb:server_port={server.port}",
         "--exclude-target", f"adb:serial={second.serial}", "--db", str(tmp_path / "r.db"),
         "--cache-dir", str(tmp_path / "c"), "--html", str(html)],
        limit_s=540)
    assert out.returncode == 0, out.stderr
    assert "across devices" in out.stdout and "slow/fast" in out.stdout
    page = html.read_text()
    assert "Across devices" in page and "adb:Standin Phone-" in page
    dry = run_bounded(
        [sys.executable, "-m", "benchlab", "run", str(_spec(tmp_path)), "--dry-run",
         "--target", "host", "--target", f"adb:server_port={server.port}"],
        limit_s=540)
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert len(planned["jobs"]) == 6  # 2 tests × (host + 2 phones)
    assert len({job["device"] for job in planned["jobs"]}) == 3


def test_a_lab_agent_serves_every_attached_phone(
    two_phones: tuple[StandinPhone, StandinPhone, AdbServer],
) -> None:
    # With two phones attached the agent registered none: it asked for the one usable
    # phone, which two phones are not, and the error was taken for "no adb here".
    from benchlab.lab.probe import enumerate_devices

    first, second, server = two_phones
    found = enumerate_devices("h", include_host=False, adb=f"adb:server_port={server.port}")
    assert sorted(d.id for d in found) == sorted([f"adb:{first.serial}",
                                                  f"adb:{second.serial}"])
    assert all(d.target.endswith(f",server_port={server.port}") for d in found)
