"""``wipe_cache``: before each measured process, evict the CPU caches and, where root may, drop
the file cache on the target (FAI-PEP's ``--wipe_cache``), so every process starts cold.

It is one ``sh`` script run on the target itself (host, ssh board, phone: no Python needed):

* CPU caches: ``dd`` reads twice the largest cache sysfs lists
  (``/sys/devices/system/cpu/cpu*/cache/index*/size``, the last level) from ``/dev/zero`` in one
  block, so the kernel writes that many bytes into one buffer and every cache line of the
  measured program is pushed out; without sysfs sizes, 64 MiB (and the record says so);
* file cache: ``sync; echo 3 > /proc/sys/vm/drop_caches``, only as root and where that file is
  writable; otherwise the record says why it was not dropped.

What it did lands in ``details.cache_wipe``; a script that fails is recorded, never a failed
job (the measurement itself is still valid, just not cold).
"""

from __future__ import annotations

from typing import Any

from benchlab.targets.base import RunRequest, Target

__all__ = ["FALLBACK_BYTES", "WIPE_SCRIPT", "parse_wipe", "wipe_caches"]

#: Bytes written when sysfs lists no cache sizes: above any phone's or desktop's last level.
FALLBACK_BYTES = 64 * 1024 * 1024
_TIMEOUT_S = 120.0
_PREFIX = "cache_wipe "

WIPE_SCRIPT = rf"""largest=0
for f in /sys/devices/system/cpu/cpu[0-9]*/cache/index*/size; do
  [ -r "$f" ] || continue
  read v < "$f" || continue
  case "$v" in
    *K) n=$(( ${{v%K}} * 1024 ));; *M) n=$(( ${{v%M}} * 1048576 ));;
    *G) n=$(( ${{v%G}} * 1073741824 ));; *[0-9]) n=$v;; *) n=0;;
  esac
  [ "$n" -gt "$largest" ] && largest=$n
done
if [ "$largest" -gt 0 ]; then bytes=$(( largest * 2 )); source=sysfs
else bytes={FALLBACK_BYTES}; source=fallback; fi
if dd if=/dev/zero of=/dev/null bs=$bytes count=1 2>/dev/null; then cpu=$bytes; else cpu=0; fi
echo "{_PREFIX}cpu_bytes=$cpu cpu_source=$source llc_bytes=$largest"
uid=$(id -u 2>/dev/null)
if [ "$uid" != 0 ]; then file="not dropped: not root (uid ${{uid:-unknown}})"
elif [ ! -w /proc/sys/vm/drop_caches ]; then
  file="not dropped: /proc/sys/vm/drop_caches is not writable here"
elif sync && echo 3 > /proc/sys/vm/drop_caches; then file=dropped
else file="not dropped: writing /proc/sys/vm/drop_caches failed"; fi
echo "{_PREFIX}file_cache=$file"
"""


def parse_wipe(stdout: str) -> dict[str, Any]:
    """The script's two ``cache_wipe`` lines as a record: ``cpu_bytes`` (0: ``dd`` failed),
    ``cpu_source`` (``sysfs`` or ``fallback``), ``llc_bytes`` (the largest cache sysfs lists,
    0 when none) and ``file_cache``."""
    record: dict[str, Any] = {}
    for line in stdout.splitlines():
        if not line.startswith(_PREFIX):
            continue
        body = line.removeprefix(_PREFIX)
        if body.startswith("file_cache="):
            record["file_cache"] = body.removeprefix("file_cache=")
            continue
        for pair in body.split():
            key, _, value = pair.partition("=")
            record[key] = int(value) if value.isdigit() else value
    return record


def wipe_caches(target: Target, workdir: str | None, done_before: int = 0) -> dict[str, Any]:
    """Run the wipe on ``target`` before one process; its record, with ``processes`` (how many
    processes have had one, this one included). A script that could not run says why in
    ``file_cache`` and ``error``, with no bytes written."""
    outcome = target.run(RunRequest(argv=WIPE_SCRIPT, cwd=workdir, timeout=_TIMEOUT_S))
    record = parse_wipe(outcome.stdout)
    if outcome.timed_out or outcome.returncode != 0 or "file_cache" not in record:
        why = ("timed out" if outcome.timed_out
               else f"exited with status {outcome.returncode}: {outcome.stderr.strip()[-200:]}")
        record = {"cpu_bytes": record.get("cpu_bytes", 0), "error": f"the wipe script {why}",
                  "file_cache": "not dropped: the wipe script did not finish"}
    record["processes"] = done_before + 1
    return record
