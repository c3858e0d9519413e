"""What a device keeps between jobs (a phone's runner bundle): pushed once into a folder named
by its content, found there by the next job, and never left half-written when a push fails
(harness/keptfiles.py); and the ELF reading that decides what goes into a bundle."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchlab.devicetools.glibcbundle import elf_dependencies
from benchlab.errors import InfrastructureError
from benchlab.frameworks.base import KeptFiles
from benchlab.harness.keptfiles import KEPT_FOLDER, push_kept
from benchlab.targets.host import HostTarget


class CopyingTarget(HostTarget):
    """This machine as a device that copies what is pushed (as adb does), and runs out of
    space on the file named ``full``."""

    def __init__(self, full: str | None = None) -> None:
        super().__init__()
        self.full, self.pushed = full, []

    def push(self, local: Path, workdir: str, name: str | None = None) -> str:
        dest = Path(workdir) / (name or Path(local).name)
        if dest.name == self.full:
            raise InfrastructureError(f"adb push {local} {dest} failed: No space left on device")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, dest)
        self.pushed.append(dest.name)
        return str(dest)


@pytest.fixture
def kept(tmp_path: Path) -> KeptFiles:
    files = {}
    for name, text in (("runner", "#!/bin/sh\necho ran\n"), ("libx.so", "x"), ("ld.so", "l")):
        files[name] = tmp_path / "src" / name
        files[name].parent.mkdir(exist_ok=True)
        files[name].write_text(text)
    return KeptFiles(key="kept.test", name="test-0123456789abcdef", files=files,
                     executables=("ld.so", "runner"))


def test_pushed_once_beside_the_jobs_and_found_by_the_next(kept: KeptFiles,
                                                           tmp_path: Path) -> None:
    workroot = tmp_path / "device"
    target = CopyingTarget()
    folder, now = push_kept(target, kept, str(workroot / "benchlab-job-1"))
    assert now and folder == str(workroot / KEPT_FOLDER / kept.name)
    assert sorted(p.name for p in Path(folder).iterdir() if not p.name.startswith(".")) == \
        ["ld.so", "libx.so", "runner"]
    assert (Path(folder) / "runner").stat().st_mode & 0o777 == 0o755
    assert (Path(folder) / "libx.so").stat().st_mode & 0o111 == 0
    target.pushed.clear()
    again, now = push_kept(target, kept, str(workroot / "benchlab-job-2"))
    assert (again, now, target.pushed) == (folder, False, [])


def test_a_push_cut_short_leaves_nothing_on_the_device(kept: KeptFiles, tmp_path: Path) -> None:
    workroot = tmp_path / "device"
    with pytest.raises(InfrastructureError, match="No space left"):
        push_kept(CopyingTarget(full="libx.so"), kept, str(workroot / "benchlab-job-1"))
    assert list((workroot / KEPT_FOLDER).iterdir()) == []
    # The next job pushes it whole.
    folder, now = push_kept(CopyingTarget(), kept, str(workroot / "benchlab-job-2"))
    assert now and (Path(folder) / "libx.so").read_text() == "x"


def test_a_programs_needed_libraries_and_loader_are_read_from_its_elf_header(
        tmp_path: Path) -> None:
    needed, interpreter = elf_dependencies(Path(shutil.which("ls") or "/bin/ls"))
    assert "libc.so.6" in needed
    assert interpreter is not None and interpreter.rsplit("/", 1)[-1].startswith("ld-linux")
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(ValueError, match="not an ELF file"):
        elf_dependencies(script)
