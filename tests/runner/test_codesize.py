"""The code-size reading (:mod:`benchlab.runner.codesize`) on maps files the test writes and
on this process's own mappings."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from benchlab.runner.codesize import mapped_files, runtime_code


def test_only_file_mappings_are_read_and_paths_may_hold_spaces(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f10 r-xp 00000000 08:01 1234 /usr/lib/libc.so.6\n"
        "7f10-7f20 r--p 00010000 08:01 1234 /usr/lib/libc.so.6\n"
        "7f20-7f30 rw-p 00000000 00:00 0 \n"
        "7f30-7f40 rw-p 00000000 00:00 0 [heap]\n"
        "7f40-7f50 r-xp 00000000 08:01 99 /opt/my lib/libx.so\n"
        "7f50-7f60 r-xp 00000000 08:01 98 /tmp/gone.so (deleted)\n")
    assert mapped_files(maps) == {Path("/usr/lib/libc.so.6"), Path("/opt/my lib/libx.so")}
    assert mapped_files(tmp_path / "absent") == set()


def test_a_distributions_mapped_libraries_and_nothing_else() -> None:
    import numpy  # noqa: F401 - its libraries are mapped in this process

    dist = importlib.metadata.distribution("numpy")
    root = Path(str(dist.locate_file("")))
    listed = [root / f for f in dist.files or () if ".so" in f.name]
    mapped = set(mapped_files())
    loaded = [p for p in listed if p in mapped or p.resolve() in mapped]
    assert loaded, "numpy maps its own extension modules"
    code = runtime_code("numpy")
    assert code is not None
    assert code.bytes == sum(p.stat().st_size for p in set(loaded))
    # Given only files of other distributions, none is the runtime's.
    assert runtime_code("numpy", [Path("/usr/lib/x86_64-linux-gnu/libc.so.6")]) is None
    assert runtime_code("no-such-distribution-here") is None
