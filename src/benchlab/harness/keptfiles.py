"""Files a device keeps between jobs: pushed once, into a folder named by their content.

A phone's ExecuTorch bundle is 17 MiB (the runner, ExecuTorch's libraries, glibc): pushed into
every job's working directory it would cross the USB cable once per job. Instead it goes into
``<workroot>/.benchlab-kept/<name>`` (``name`` carries a digest of the content, so a changed
runner is another folder), beside the jobs' folders and never removed with them. A later job,
or a later run, finds the folder finished and pushes nothing.

A folder is finished when its marker file is there. The files go into a partial folder first,
the marker last, and the partial folder is renamed into place in one step: a push cut short (a
phone out of space, an unplugged cable) leaves nothing that looks finished, and the partial
folder is removed before the job fails with the reason.
"""

from __future__ import annotations

import posixpath
import secrets
import shlex
import tempfile
from pathlib import Path
from typing import Any

from benchlab.devicetools.elf import elf_architecture
from benchlab.errors import InfrastructureError
from benchlab.frameworks.base import Framework, KeptFiles, Staging
from benchlab.targets.base import RunRequest, Target

__all__ = ["KEPT_FOLDER", "kept_folder", "push_device_files", "push_kept"]

#: The folder, beside the jobs' working directories, that holds what devices keep.
KEPT_FOLDER = ".benchlab-kept"
_MARKER = ".benchlab-complete"


def kept_folder(workdir: str, name: str) -> str:
    """The device folder of kept files ``name``, beside job folder ``workdir``."""
    return posixpath.join(posixpath.dirname(workdir.rstrip("/")), KEPT_FOLDER, name)


def _shell(target: Target, command: str) -> tuple[int | None, str]:
    done = target.run(RunRequest(argv=command, timeout=120.0))
    return done.returncode, (done.stdout + done.stderr).strip()


def push_kept(target: Target, kept: KeptFiles, workdir: str) -> tuple[str, bool]:
    """The device folder holding ``kept`` (beside ``workdir``), and whether this call pushed
    it (False: a finished folder was there already).

    Raises :class:`InfrastructureError` when a push or the final rename fails, after removing
    what it had pushed.
    """
    folder = kept_folder(workdir, kept.name)
    q_folder = shlex.quote(folder)
    status, said = _shell(target, f"cat {q_folder}/{_MARKER} 2>/dev/null")
    if status == 0 and said == kept.name:
        return folder, False
    partial = f"{folder}.partial-{secrets.token_hex(4)}"
    q_partial = shlex.quote(partial)
    try:
        for name, path in kept.files.items():
            target.push(Path(path), partial, name)
        with tempfile.TemporaryDirectory(prefix="benchlab-kept-") as tmp:
            marker = Path(tmp) / _MARKER
            marker.write_text(kept.name)
            target.push(marker, partial, _MARKER)  # last: a cut push has no marker
        modes = " ".join(shlex.quote(f"{partial}/{name}") for name in kept.executables)
        status, said = _shell(target, (
            (f"chmod 755 {modes} && " if modes else "")
            # Another job may have finished the same folder meanwhile: keep its copy.
            + f"if [ -f {q_folder}/{_MARKER} ]; then rm -rf {q_partial}; else "
            f"rm -rf {q_folder} && mv {q_partial} {q_folder}; fi"))
        if status != 0:
            raise InfrastructureError(f"could not finish {folder} on the device: {said[-300:]}")
    except InfrastructureError:
        _shell(target, f"rm -rf {q_partial}")
        raise
    return folder, True


def push_device_files(framework: Framework, target: Target, staging: Staging, workdir: str,
                      built: dict[str, Path]) -> tuple[dict[str, str], dict[str, Any] | None]:
    """What ``framework`` makes for the device (a tool built for its CPU, raw inputs: its
    ``device_files``), pushed into ``workdir``, and what the device keeps between jobs (its
    ``kept_files``: a phone's runner bundle), pushed once beside it: their device paths by
    key (a kept folder's under its key, each of its files under ``KEY/NAME``), and what was
    kept (``details.kept_files``; None: nothing). The programs among them are added to
    ``built``: the job's code size counts them."""
    stage = getattr(framework, "device_files", None)
    keep = getattr(framework, "kept_files", None)
    made = stage(staging) if stage is not None else {}
    built.update({p.name: p for p in made.values() if elf_architecture(p) is not None})
    pushed = {key: target.push(path, workdir, path.name) for key, path in made.items()}
    kept = keep(staging) if keep is not None else None
    if kept is None:
        return pushed, None
    folder, now = push_kept(target, kept, workdir)
    pushed[kept.key] = folder
    pushed.update({f"{kept.key}/{name}": f"{folder}/{name}" for name in kept.files})
    built.update(kept.files)
    return pushed, {"folder": folder, "pushed_now": now, "what": kept.label,
                    "bytes": sum(Path(p).stat().st_size for p in kept.files.values())}
