"""The adb target: output parsers, and phone management against the stand-in adbd."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from benchlab.errors import InfrastructureError, UsageError
from benchlab_standin import StandinPhone
from benchlab_standin.adbserver import AdbServer, isolated_adb_server
from benchlab_standin.profile import default_profile
from benchlab.targets.adb import AdbTarget, parse_devices, parse_dumpsys_battery, parse_getprop
from benchlab.targets.base import RunRequest, Target

DEVICES = """\
List of devices attached
R58M123ABC             device usb:1-1 product:oriole model:Pixel_6 device:oriole transport_id:3
127.0.0.1:5555         offline transport_id:4
emulator-5554          device product:sdk_gphone64 model:sdk_gphone64_arm64 device:emu64a transport_id:1

"""


def test_devices_list_is_read_with_states_and_properties() -> None:
    devices = parse_devices(DEVICES)
    assert [(d.serial, d.state) for d in devices] == [
        ("R58M123ABC", "device"), ("127.0.0.1:5555", "offline"), ("emulator-5554", "device"),
    ]
    assert devices[0].properties["model"] == "Pixel_6"
    assert devices[0].properties["usb"] == "1-1"


def test_getprop_and_dumpsys_battery_are_read() -> None:
    props = parse_getprop("[ro.product.model]: [Pixel 6]\n[ro.soc.model]: [Tensor]\n"
                          "[empty]: []\nnoise line\n")
    assert props == {"ro.product.model": "Pixel 6", "ro.soc.model": "Tensor", "empty": ""}
    battery = parse_dumpsys_battery(
        "Current Battery Service state:\n  AC powered: false\n  USB powered: true\n"
        "  status: 2\n  level: 57\n  voltage: 3912\n  temperature: 318\n  Charge counter: 2471000\n"
    )
    assert battery == {
        "status": "Charging", "charging": True, "level_percent": 57, "temperature_c": 31.8,
        "voltage_v": 3.912, "current_ma": None, "charge_counter_uah": 2471000,
        "powered_by": ["usb"],
    }
    assert parse_dumpsys_battery("Can't find service: battery") is None


def test_bad_set_freq_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="set_freq"):
        AdbTarget(set_freq="turbo")


@pytest.fixture(scope="module")
def two_phones(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AdbServer, list]]:
    """Two stand-in phones of different models on one isolated adb server."""
    if shutil.which("adb") is None:
        pytest.skip("the adb client is not installed (apt-get install adb)")
    root = tmp_path_factory.mktemp("phones")
    other = default_profile().__class__(model="Other Phone", soc_model="SM8650",
                                        serialno="STANDIN0002")
    with StandinPhone(root / "a") as first, StandinPhone(root / "b", profile=other) as second, \
            isolated_adb_server() as server:
        server.connect(first.serial)
        server.connect(second.serial)
        yield server, [first, second]


def test_several_phones_need_a_choice(two_phones: tuple[AdbServer, list]) -> None:
    server, phones = two_phones
    with pytest.raises(UsageError, match="2 Android devices match"):
        AdbTarget(server_port=server.port).chosen_serial()
    by_model = AdbTarget(server_port=server.port, model="Other_Phone")
    assert by_model.chosen_serial() == phones[1].serial
    by_soc = AdbTarget(server_port=server.port, soc="SM8350")
    assert by_soc.chosen_serial() == phones[0].serial
    nothing = AdbTarget(server_port=server.port, model="Nokia_3310")
    assert not nothing.availability().ok
    with pytest.raises(InfrastructureError, match="model=Nokia_3310"):
        nothing.chosen_serial()


def test_target_protocol_pinning_and_set_freq(two_phones: tuple[AdbServer, list]) -> None:
    server, phones = two_phones
    target = AdbTarget(phones[0].serial, server_port=server.port, set_freq="min")
    assert isinstance(target, Target)
    result = target.run(RunRequest(argv=["sh", "-c", "grep Cpus_allowed_list /proc/self/status"],
                                   cpu_list="1"))
    assert result.ok and result.stdout.split()[-1] == "1"
    workdir = target.make_workdir("freq")  # applies set_freq=min first
    try:
        # The files are written at once; scaling_cur_freq follows on the next governor tick
        # (the stand-in's simulation, like a kernel, updates it asynchronously).
        deadline = time.monotonic() + 15
        while True:
            clusters = target.device_state()["clusters"]
            settled = all(c["max_khz"] == c["cur_khz"][0] == c["cur_khz"][1] for c in clusters)
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert all(c["governors"] == ["performance"] for c in clusters)
        assert settled, clusters
        assert clusters[0]["max_khz"] < clusters[0]["hw_max_khz"]
    finally:
        target.remove_workdir(workdir)
        target.apply_frequency("max")


def test_push_pull_and_logcat(two_phones: tuple[AdbServer, list], tmp_path: Path) -> None:
    server, phones = two_phones
    target = AdbTarget(phones[1].serial, server_port=server.port)
    source = tmp_path / "model.bin"
    source.write_bytes(bytes(range(256)) * 4096)
    workdir = target.make_workdir("files")
    try:
        remote = target.push(source, workdir, "m.bin")
        assert (phones[1].root / remote.lstrip("/")).read_bytes() == source.read_bytes()
        assert target.pull(remote, tmp_path / "back.bin").read_bytes() == source.read_bytes()
        result = target.run(RunRequest(argv="log -t probe hello-from-the-phone; echo done"))
        assert result.stdout == "done\n"
        assert "hello-from-the-phone" in result.log
    finally:
        target.remove_workdir(workdir)
    with pytest.raises(InfrastructureError, match="adb pull"):
        target.pull("/data/local/tmp/no-such-file", tmp_path / "x")


def test_reboot_waits_until_the_phone_is_back(two_phones: tuple[AdbServer, list]) -> None:
    server, phones = two_phones
    target = AdbTarget(phones[0].serial, server_port=server.port)
    boots = phones[0].boot_count
    target.reboot(timeout=150)
    assert phones[0].boot_count == boots + 1
    assert target.run(RunRequest(argv="echo back")).stdout == "back\n"


# ``echo VALUE > /sys/devices/system/cpu/cpuN/cpufreq/FILE``: one write of set_freq's command.
_CPUFREQ_WRITE = re.compile(r"echo (\w+) > /sys/devices/system/cpu/(cpu\d+)/cpufreq/(\w+)")
ENERGY_DOC = Path(__file__).parents[2] / "docs" / "energy.md"


def test_set_freq_writes_the_files_energy_md_lists_and_nothing_restores_them(
        two_phones: tuple[AdbServer, list]) -> None:
    """docs/energy.md ("Device files benchlab writes") says which files set_freq writes, in
    which order, and that they stay set: read here from the commands the phone received."""
    server, phones = two_phones
    phone = phones[1]
    target = AdbTarget(phone.serial, server_port=server.port, set_freq="mid")
    seen = len(phone.opened_services)
    workdir = target.make_workdir("freq-doc")
    target.remove_workdir(workdir)
    writes = [_CPUFREQ_WRITE.findall(service) for service in phone.opened_services[seen:]]
    (command,) = [found for found in writes if found]  # one shell command holds every write
    per_cpu: dict[str, list[tuple[str, str]]] = {}
    for value, cpu, name in command:
        per_cpu.setdefault(cpu, []).append((name, value))
    assert sorted(per_cpu) == sorted(f"cpu{n}" for n in range(phone.profile.cpu_count))
    state = target.device_state()["cpus"]
    for cpu, steps in per_cpu.items():
        low = str(state[cpu]["hw_min_khz"])
        step = steps[2][1]
        assert steps == [("scaling_governor", "performance"), ("scaling_min_freq", low),
                         ("scaling_max_freq", step), ("scaling_min_freq", step)]
        # The job is over and its directory gone: the settings stay as set_freq left them.
        assert state[cpu]["governor"] == "performance"
        assert state[cpu]["min_khz"] == state[cpu]["max_khz"] == int(step)
        assert int(step) < state[cpu]["hw_max_khz"]
    section = ENERGY_DOC.read_text().split("### Device files benchlab writes", 1)[1]
    section = section.split("\n## ", 1)[0]
    for name in ("scaling_governor", "scaling_min_freq", "scaling_max_freq"):
        assert f"`{name}`" in section
    assert "Nothing restores these files" in section


@pytest.fixture(scope="module")
def v2_phone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AdbServer, StandinPhone]]:
    """A stand-in phone that announces ``shell_v2``, as modern phones do, on its own server."""
    if shutil.which("adb") is None:
        pytest.skip("the adb client is not installed (apt-get install adb)")
    base = default_profile()
    profile = replace(base, serialno="STANDINV2", features=(*base.features, "shell_v2"))
    with StandinPhone(tmp_path_factory.mktemp("v2") / "device", profile=profile) as phone, \
            isolated_adb_server() as server:
        server.connect(phone.serial)
        yield server, phone


def test_the_wrapper_works_over_shell_v2(v2_phone: tuple[AdbServer, StandinPhone]) -> None:
    """docs/targets.md: with shell_v2 (stderr apart, a real exit status) the wrapper still
    gives the command's own status, stdout and stderr, pins, and kills at the timeout."""
    server, phone = v2_phone
    target = AdbTarget(phone.serial, server_port=server.port)
    # Unwrapped, the client itself now reports the status and a separate stderr: the
    # protocol really is shell_v2 (the legacy shell gives 0 and one merged stream).
    raw = target.shell("echo out; echo err >&2; exit 3")
    assert (raw.returncode, raw.stdout, raw.stderr) == (3, "out\n", "err\n")
    assert any(s.startswith("shell,v2") for s in phone.opened_services)
    assert not any(s.startswith("shell:") for s in phone.opened_services)

    result = target.run(RunRequest(argv="echo out; echo err >&2; exit 5"))
    assert (result.returncode, result.stdout, result.stderr) == (5, "out\n", "err\n")
    pinned = target.run(RunRequest(argv=["sh", "-c", "grep Cpus_allowed_list /proc/self/status"],
                                   cpu_list="1"))
    assert pinned.ok and pinned.stdout.split()[-1] == "1"

    hung = target.run(RunRequest(argv="echo $$ > /data/local/tmp/v2.pid; sleep 300",
                                 timeout=3.0))
    assert hung.timed_out and hung.returncode is None
    pid = int((phone.root / "data/local/tmp/v2.pid").read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists() or \
        Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
