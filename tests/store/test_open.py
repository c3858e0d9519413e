"""Opening a store: locations, errors, schema versions and migrations, durability."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import Connection, text

import benchlab.schema.result
from benchlab.errors import StoreError
from benchlab.schema.result import SCHEMA_VERSION
from benchlab.store import STORE_SCHEMA_VERSION, default_store_path, open_store
from benchlab.store.store import _open

SRC_DIR = Path(benchlab.schema.result.__file__).resolve().parents[1]


def meta_values(path: Path) -> dict[str, str]:
    """The meta table of a SQLite store, read without benchlab."""
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def test_a_new_store_records_both_schema_versions(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "results.db"
    with open_store(path) as store:
        assert store.dialect == "sqlite"
    assert meta_values(path) == {
        "store_schema_version": str(STORE_SCHEMA_VERSION),
        "result_schema_version": str(SCHEMA_VERSION),
    }


def test_sqlite_store_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    open_store(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_sqlite_url_is_used_as_given(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "r.db"
    with open_store(f"sqlite:///{path}") as store:
        store.start_run(fingerprint="fp")
    with open_store(str(path)) as again:
        assert len(again.list_runs()) == 1


def test_in_memory_store_works(tmp_path: Path) -> None:
    with open_store("sqlite://") as store:
        run = store.start_run(fingerprint="fp")
        assert store.get_run().id == run.id


def test_default_location_follows_xdg_data_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert default_store_path({"XDG_DATA_HOME": "/data"}) == Path("/data/benchlab/results.db")
    relative_ignored = default_store_path({"XDG_DATA_HOME": "rel", "HOME": "/home/u"})
    assert relative_ignored == Path("/home/u/.local/share/benchlab/results.db")
    assert default_store_path({"HOME": "/home/u"}) == relative_ignored

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with open_store() as store:
        store.start_run(fingerprint="fp")
    assert (tmp_path / "xdg" / "benchlab" / "results.db").is_file()


def test_path_under_a_file_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match="cannot create the directory"):
        open_store(blocker / "results.db")


def test_directory_path_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        open_store(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through directory permissions")
def test_read_only_directory_is_a_store_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(StoreError):
            open_store(locked / "results.db")
    finally:
        locked.chmod(0o700)


def test_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    path.write_bytes(b"these are not the bytes of an SQLite database" * 100)
    with pytest.raises(StoreError, match="could not open the results store"):
        open_store(path)


def test_foreign_tables_without_meta_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY)")
    with pytest.raises(StoreError, match="not a benchlab results store"):
        open_store(path)


@pytest.mark.parametrize(
    "url",
    [
        "nosuchdb://user@host/db",
        "postgresql+psycopg2://nobody@127.0.0.1:1/nothing",
        "postgresql://host:notaport/db",
    ],
)
def test_bad_or_unreachable_urls_are_store_errors(url: str) -> None:
    with pytest.raises(StoreError):
        open_store(url)


def test_password_is_not_shown_in_errors() -> None:
    with pytest.raises(StoreError) as caught:
        open_store("postgresql+psycopg2://user:s3cret@127.0.0.1:1/db")
    assert "s3cret" not in str(caught.value)


def test_store_from_a_newer_benchlab_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    open_store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'store_schema_version'")
    with pytest.raises(StoreError, match="newer benchlab"):
        open_store(path)


def test_older_store_is_migrated_step_by_step(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with _open(path, target_version=1) as store:
        store.start_run(fingerprint="fp")
    applied: list[int] = []

    def to_v2(conn: Connection) -> None:
        applied.append(1)
        conn.execute(text("ALTER TABLE runs ADD COLUMN note TEXT"))

    def to_v3(conn: Connection) -> None:
        applied.append(2)
        conn.execute(text("UPDATE runs SET note = 'migrated'"))

    migrations = {1: to_v2, 2: to_v3}
    with _open(path, target_version=3, migrations=migrations) as migrated:
        assert len(migrated.list_runs()) == 1
    assert applied == [1, 2]
    assert meta_values(path)["store_schema_version"] == "3"
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT note FROM runs").fetchall() == [("migrated",)]

    # Reopening at the same version runs nothing; this benchlab (version 2) now refuses it.
    _open(path, target_version=3, migrations=migrations).close()
    assert applied == [1, 2]
    with pytest.raises(StoreError, match="newer benchlab"):
        open_store(path)


def test_failed_migration_leaves_the_store_untouched(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    _open(path, target_version=1).close()

    def half_done(conn: Connection) -> None:
        conn.execute(text("ALTER TABLE runs ADD COLUMN note TEXT"))

    # Version 2 -> 3 has no migration: the whole upgrade must roll back.
    with pytest.raises(StoreError, match="no migration"):
        _open(path, target_version=3, migrations={1: half_done})
    assert meta_values(path)["store_schema_version"] == "1"
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
    assert "note" not in columns


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from benchlab.schema.result import JobIdentity, Result, Sample, Status
    from benchlab.store import open_store

    store = open_store(sys.argv[1])
    run = store.start_run(fingerprint="killed")
    for n in range(5):
        identity = JobIdentity("s", f"model{n}", "h", "t", "pytorch", {}, "host")
        samples = tuple(Sample("latency", 1000.5 + i, "us", index=i) for i in range(5000))
        store.add_result(run.id, Result(identity, Status.OK, samples=samples))
        if n == 1:
            os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_committed_results_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    env = {**os.environ, "PYTHONPATH": str(SRC_DIR)}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True, timeout=120
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode(errors="replace")

    with open_store(path) as store:
        run = store.find_resumable_run("killed")
        assert run is not None and run.ok_count == 2
        loaded = store.results(run.id)
        assert [r.identity.model_name for r in loaded] == ["model0", "model1"]
        for result in loaded:
            assert result.samples_of("NET latency") == [1000.5 + i for i in range(5000)]
        assert len(store.finished_job_keys(run.id)) == 2


def test_version_1_store_migrates_to_2_and_a_local_store_has_no_lab_tables(
        tmp_path: Path) -> None:
    """The real 1 -> 2 migration: version 2 once added the lab's tables; the lab owns them now
    (``lab init`` creates them), so neither a migrated nor a fresh local store has them."""
    path = tmp_path / "results.db"
    with open_store(path) as store:
        store.start_run(fingerprint="fp")
    with sqlite3.connect(path) as conn:  # make it exactly what benchlab 1 wrote
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'store_schema_version'")
    with open_store(path) as store:
        assert len(store.list_runs()) == 1
    assert meta_values(path)["store_schema_version"] == str(STORE_SCHEMA_VERSION) == "2"
    with sqlite3.connect(path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"runs", "results", "samples", "meta"} <= names
    assert not {name for name in names if name.startswith("lab_")}
