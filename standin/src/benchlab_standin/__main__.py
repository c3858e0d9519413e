"""``python -m benchlab_standin --port 5555 --root DIR``: run a stand-in phone until Ctrl-C;
``python -m benchlab_standin --board cortex-a76``: an emulated ARM Linux board over ssh;
``python -m benchlab_standin --prepare``: build what the ARM stand-ins need, once per machine."""

from __future__ import annotations

import argparse
import logging
import signal
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from benchlab_standin import StandinPhone, arm_profile, default_profile
from benchlab_standin.armboard import BOARD_CORES, ArmBoard
from benchlab_standin.prepare import ARM_BUILDS, CANNOT_BUILD_HERE, prepare_arm_standins
from benchlab_standin.profile import ARM_CORES


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, start the stand-in, print how to connect, wait for Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m benchlab_standin",
                                     description="A stand-in Android phone speaking ADB.")
    parser.add_argument("--port", type=int, default=5555, help="TCP port (0: any free one)")
    parser.add_argument("--root", type=Path, default=None,
                        help="sandbox directory playing the device filesystem "
                             "(default: a new temporary directory)")
    parser.add_argument("--unrooted", action="store_true", help="a user build: no su")
    parser.add_argument("--discharging", action="store_true", help="start unplugged")
    parser.add_argument("--arm", choices=sorted(ARM_CORES), default=None,
                        help="an ARM phone: pushed aarch64 programs run on this emulated core "
                             "(QEMU user mode; needs qemu-user-static, and root once to "
                             "register it with binfmt_misc)")
    parser.add_argument("--board", choices=sorted(BOARD_CORES), default=None,
                        help="instead of a phone, an ARM Linux board with Python on this "
                             "emulated core, reached over ssh (needs root and mmdebstrap; the "
                             "first start builds its root, about 100 s)")
    parser.add_argument("--prepare", action="store_true",
                        help="build what the ARM stand-ins need (the board's arm64 root, "
                             "llama.cpp's runner for the ARM phone), say what each built and "
                             "how long it took, and exit; a second run finds them cached")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="with --prepare: the artifact cache the phone's programs go to "
                             "(default: benchlab's own)")
    parser.add_argument("--only", action="append", choices=sorted(ARM_BUILDS), default=None,
                        help="with --prepare: this build alone (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every service opened")
    args = parser.parse_args(argv)
    if args.prepare:
        return _prepare(args.cache_dir, tuple(args.only) if args.only else None)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(name)s: %(message)s")
    root = args.root or Path(tempfile.mkdtemp(prefix="benchlab-standin-"))
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    if args.board:
        return _serve_board(args.board, root, stop)
    base = arm_profile(args.arm) if args.arm else default_profile()
    profile = replace(base, rooted=not args.unrooted,
                      charging=not args.discharging)
    # Ctrl-C (or SIGTERM) only sets a flag (above): an interrupt landing mid-start or mid-stop
    # must not leave the sandbox half-written or the port open.
    with StandinPhone(root, port=args.port, profile=profile) as phone:
        print(f"stand-in phone {phone.serial} (sandbox {root})")
        print(f"connect with: adb connect {phone.serial}", flush=True)
        if 5555 <= phone.port <= 5585:
            # The adb server probes these ports for emulators by itself.
            print("note: adb servers also list this port as an emulator-NNNN device", flush=True)
        while not stop.wait(0.5):
            pass
        print("stopping", flush=True)
    return 0


def _prepare(cache_dir: Path | None, keys: tuple[str, ...] | None) -> int:
    """Exit 0 when everything is ready, 1 when a build failed (its error printed),
    :data:`CANNOT_BUILD_HERE` when one cannot run on this machine."""
    from benchlab.errors import InfrastructureError

    def say(text: str) -> None:
        print(text, flush=True)

    began = time.monotonic()
    try:
        built, skipped = prepare_arm_standins(cache_dir, keys=keys, progress=say)
    except (RuntimeError, InfrastructureError) as exc:
        say(f"error: {exc}")
        return 1
    for name, why in skipped.items():
        say(f"{name}: cannot be built here: {why}")
    say(f"prepared {len(built)} of {len(built) + len(skipped)} in "
        f"{time.monotonic() - began:.0f} s")
    return CANNOT_BUILD_HERE if skipped else 0


def _serve_board(cpu: str, state: Path, stop: threading.Event) -> int:
    try:
        board = ArmBoard(state, cpu=cpu, progress=print).start()
    except RuntimeError as exc:
        print(f"error: {exc}")
        return 1
    try:
        print(f"ARM board {board.alias} on an emulated {cpu} (state {state})")
        print(f"benchlab run --target '{board.target_text}'", flush=True)
        while not stop.wait(0.5):
            pass
        print("stopping", flush=True)
    finally:
        board.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
