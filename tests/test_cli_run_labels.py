"""FAI-PEP's run labels, flat JSON folder and saved options, through ``benchlab run`` in this
process (typer's CliRunner): ``--user-identifier``/``--user_identifier``, ``--user-string``,
``--platform-sig``, ``--hash-platform-mapping``, ``--simple-json-dir``/
``--simple_local_reporter``, ``benchlab config set|show|reset`` and ``--reset-options``.

The jobs are a script spec (one short Python process each); the store is a SQLite file."""

from __future__ import annotations

import json
import re
import socket
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchlab.cli import commands
from benchlab.errors import UsageError
from benchlab.harness.sweep import Sweep
from benchlab.report.jsondir import simple_result_name
from benchlab.schema.labels import RunLabels, parse_regressed_types
from benchlab.schema.result import DetailKey, EnvKey
from benchlab.store import open_store


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own: its config file and caches, none of the user's."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return home


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    script = tmp_path / "job.py"
    script.write_text("import sys\nprint('PyTorchObserver {\"type\":\"NET\",\"metric\":"
                      "\"latency\",\"unit\":\"ms\",\"value\":' + sys.argv[1] + '}')\n")
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({
        "model": {"name": "tiny", "format": "script",
                  "files": {"job": {"location": str(script), "md5": None}}},
        "tests": [{"identifier": f"t{i}", "commands": [f"{sys.executable} {{files.job}} 1.{i}"],
                   "repeat": 1} for i in range(2)]}))
    return path


def _invoke(*args: str) -> str:
    outcome = CliRunner().invoke(commands.app, list(args))
    assert outcome.exit_code == 0, (outcome.output, outcome.exception)
    return outcome.output


def test_run_labels_reach_every_result_the_store_the_files_and_the_reports(
        home: Path, spec: Path, tmp_path: Path) -> None:
    db, flat, nested = tmp_path / "r.db", tmp_path / "flat", tmp_path / "nested"
    mapping = tmp_path / "platforms.json"
    mapping.write_text(json.dumps({socket.gethostname(): "lab-x86-01"}))
    shown = _invoke("run", str(spec), "--db", str(db), "-q", "--user_identifier", "nightly-42",
                    "--user-string", "ana", "--platform_sig", "my-box",
                    "--hash_platform_mapping", str(mapping), "--json-dir", str(nested),
                    "--simple_local_reporter", str(flat), "--regressed_types", '["latency"]')
    assert "user: nightly-42 · user string: ana · platform: lab-x86-01" in shown
    with open_store(db) as store:
        results = store.results(store.get_run("latest").id, with_samples=True)
    assert len(results) == 2
    for result in results:  # the store round-trips them
        assert result.details[DetailKey.USER_IDENTIFIER] == "nightly-42"
        assert result.details[DetailKey.USER_STRING] == "ana"
        assert result.details[DetailKey.REGRESSED_TYPES] == ["NET latency"]
        # The mapping names this host: its name wins over the signature (FAI-PEP's order).
        assert result.environment[EnvKey.PLATFORM] == "lab-x86-01"
    # The flat folder: one file per job, no run level; the nested one keeps the run's folder.
    assert sorted(p.name for p in flat.iterdir()) == sorted(simple_result_name(r)
                                                            for r in results)
    [run_folder] = nested.iterdir()
    assert len(list(run_folder.rglob("*.json"))) == 2
    written = json.loads((flat / simple_result_name(results[0])).read_text())
    assert written["details"]["user_identifier"] == "nightly-42"
    assert "user: nightly-42" in _invoke("results", "show", "--db", str(db))
    _invoke("results", "export", str(tmp_path / "out.csv"), "--db", str(db))
    assert (tmp_path / "out.csv").read_text().count("nightly-42,lab-x86-01") == 2
    _invoke("results", "html", str(tmp_path / "r.html"), "--db", str(db))
    assert "user: nightly-42" in (tmp_path / "r.html").read_text()
    # A second run replaces each job's flat file: the folder holds the latest of each.
    _invoke("run", str(spec), "--db", str(db), "-q", "--user-identifier", "nightly-43",
            "--simple-json-dir", str(flat))
    assert len(list(flat.iterdir())) == 2
    assert all(json.loads(p.read_text())["details"]["user_identifier"] == "nightly-43"
               for p in flat.iterdir())


def test_a_bad_platform_mapping_names_the_file(home: Path, spec: Path, tmp_path: Path) -> None:
    mapping = tmp_path / "platforms.json"
    mapping.write_text('{"R58M": 7}')
    outcome = CliRunner().invoke(commands.app, ["run", str(spec), "--hash-platform-mapping",
                                                str(mapping)])
    assert isinstance(outcome.exception, UsageError)
    assert str(outcome.exception).startswith(f"{mapping}: device 'R58M': the platform name")


def test_saved_defaults_apply_under_the_command_line_until_reset(
        home: Path, spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = home / ".config" / "benchlab" / "lab.toml"
    config.parent.mkdir(parents=True)
    config.write_text('# my lab\n[report]\ntoken = "bl_keep"\n')
    monkeypatch.chdir(tmp_path)
    _invoke("config", "set", "user_identifier", "saved-id")
    _invoke("config", "set", "json-dir", "out")  # a path is saved absolute
    _invoke("config", "set", "db", str(tmp_path / "saved.db"))
    _invoke("config", "set", "target", "host")
    shown = _invoke("config", "show")
    assert str(config) in shown and "'saved-id'" in shown and repr(str(tmp_path / "out")) in shown
    assert config.read_text().startswith('# my lab\n[report]\ntoken = "bl_keep"\n')

    _invoke("run", str(spec), "-q")
    with open_store(tmp_path / "saved.db") as store:
        saved = store.results(store.get_run("latest").id)
    assert {r.details[DetailKey.USER_IDENTIFIER] for r in saved} == {"saved-id"}
    assert len(list((tmp_path / "out").rglob("*.json"))) == 2
    # The command line wins over a saved default.
    _invoke("run", str(spec), "-q", "--user-identifier", "cli-id")
    with open_store(tmp_path / "saved.db") as store:
        latest = store.results(store.get_run("latest").id)
    assert {r.details[DetailKey.USER_IDENTIFIER] for r in latest} == {"cli-id"}
    # --reset_options forgets them (the token stays): this run goes to the --db given.
    _invoke("run", str(spec), "-q", "--reset_options", "--db", str(tmp_path / "other.db"))
    assert 'token = "bl_keep"' in config.read_text() and "[run]" not in config.read_text()
    with open_store(tmp_path / "other.db") as store:
        other = store.results(store.get_run("latest").id)
    assert all(DetailKey.USER_IDENTIFIER not in r.details for r in other)
    assert "forgot nothing" in _invoke("config", "reset")


@pytest.mark.parametrize(("args", "text", "says"), [
    (["config", "set", "colour", "red"], None, r"\[run\] colour: not an option whose default"),
    (["config", "set", "energy", "watts"], None, r"\[run\] energy: 'watts' is not one of"),
    (["config", "set", "db", "a", "b"], None, r"\[run\] db: takes one value, not 2"),
    (["config", "show"], "[run]\ntarget = 5\n", r"\[run\] target: expected a list"),
    (["config", "show"], "[run]\nshoe_size = '9'\n", r"\[run\] shoe_size: not an option"),
])
def test_an_unknown_key_or_bad_value_names_the_file_and_the_key(
        home: Path, args: list[str], text: str | None, says: str) -> None:
    config = home / ".config" / "benchlab" / "lab.toml"
    if text is not None:
        config.parent.mkdir(parents=True)
        config.write_text(text)
    outcome = CliRunner().invoke(commands.app, args)
    assert isinstance(outcome.exception, UsageError), outcome.output
    assert str(outcome.exception).startswith(f"{config}: ")
    assert re.search(says, str(outcome.exception))


def test_regressed_types_and_labels_travel_with_the_sweep() -> None:
    assert parse_regressed_types('["latency", "NET memory_peak"]') == (
        "NET latency", "NET memory_peak")
    assert parse_regressed_types("latency,latency") == ("NET latency",)
    with pytest.raises(UsageError, match="not a JSON list"):
        parse_regressed_types("[latency")
    labels = RunLabels(user_identifier="x", regressed_types=("NET latency",))
    sweep = Sweep.of(models=["mlp"], labels=labels)
    back = Sweep.from_wire(sweep.to_wire())
    assert back.labels == labels
    # Labels are not part of the sweep's name: a labelled run resumes an unlabelled one.
    assert sweep.fingerprint_line("host") == Sweep.of(models=["mlp"]).fingerprint_line("host")
    assert Sweep.of(models=["mlp"]).to_wire() == {"v": 1, "specs": {}, "models": ["mlp"]}
