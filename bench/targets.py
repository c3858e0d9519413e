"""Cost of one command on each target: host, ssh (multiplexed and not) and the stand-in phone.

What a job pays per process for reaching its device, beyond the process itself. Each repeat
runs ``--commands`` trivial commands (``true``) through ``Target.run`` on every target,
interleaved in a rotating order so a slow phase of the machine does not always land on the
same one, and reports milliseconds per command. It also times one device-state probe per target
(read twice per job). The ssh board is a real sshd on loopback and the phone the stand-in adbd
driven by the real adb client, so network latency is zero: on a real board or phone add the
link's round trips (about one per command over ssh, three over adb with logcat capture on).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _common import parse_args, spread, write_result
from benchlab_standin import StandinPhone
from benchlab_standin.adbserver import isolated_adb_server
from benchlab_standin.board import LoopbackBoard

from benchlab.targets.adb import AdbTarget
from benchlab.targets.base import RunRequest
from benchlab.targets.host import HostTarget
from benchlab.targets.ssh import SshTarget

NAME = "targets"


def _per_command_ms(target: object, commands: int) -> float:
    started = time.perf_counter()
    for _ in range(commands):
        result = target.run(RunRequest(argv="true", timeout=60))  # type: ignore[attr-defined]
        if not result.ok:
            raise RuntimeError(f"{target}: {result}")
    return (time.perf_counter() - started) / commands * 1e3


def _probe_ms(target: object) -> float:
    started = time.perf_counter()
    state = target.device_state()  # type: ignore[attr-defined]
    if not state.get("complete"):
        raise RuntimeError(f"incomplete probe: {state}")
    return (time.perf_counter() - started) * 1e3


def main() -> None:
    """Measure, print a table, write the JSON result."""
    args = parse_args(__doc__.splitlines()[0])
    commands = 3 if args.smoke else 30
    repeats = 1 if args.smoke else args.repeats
    tmp = Path(tempfile.mkdtemp(prefix="benchlab-bench-targets-"))
    with LoopbackBoard(tmp / "board") as board, StandinPhone(tmp / "phone") as phone, \
            isolated_adb_server() as server:
        server.connect(phone.serial)
        targets = {
            "host": HostTarget(),
            "ssh (multiplexed)": SshTarget(board.alias, config=str(board.client_config)),
            "ssh (new connection each)": SshTarget(board.alias, config=str(board.client_config),
                                                   multiplex=False),
            "adb stand-in": AdbTarget(phone.serial, server_port=server.port, logcat=False),
            "adb stand-in + logcat": AdbTarget(phone.serial, server_port=server.port),
        }
        names = list(targets)
        per_command: dict[str, list[float]] = {n: [] for n in names}
        probe: dict[str, list[float]] = {n: [] for n in names}
        for name in names:  # warm: open the ssh master, start the adb transport
            _per_command_ms(targets[name], 1)
        for repeat in range(repeats):
            order = names[repeat % len(names):] + names[:repeat % len(names)]
            for name in order:
                per_command[name].append(_per_command_ms(targets[name], commands))
                probe[name].append(_probe_ms(targets[name]))
        targets["ssh (multiplexed)"].close()  # type: ignore[attr-defined]
    figures = {
        name: {"ms_per_command": spread(per_command[name]),
               "ms_per_state_probe": spread(probe[name])}
        for name in names
    }
    figures["commands_per_repeat"] = commands  # type: ignore[assignment]
    print(f"{'target':28} {'ms/command (median, min–max)':>32} {'ms/probe (median)':>18}")
    for name in names:
        c, p = figures[name]["ms_per_command"], figures[name]["ms_per_state_probe"]
        print(f"{name:28} {c['median']:>12.1f} ({c['min']:.1f}–{c['max']:.1f}){'':>9}"
              f" {p['median']:>12.1f}")
    print(f"wrote {write_result(NAME, args, figures)}")


if __name__ == "__main__":
    main()
