"""End-to-end sweeps through ``benchlab.run`` with real processes: one bad job never stops a sweep.

Each job is a ``generic`` command (a small Python script written by the test) that crashes,
hangs, runs out of memory, prints garbage or works; the sweep must record each with the right
status and reason, keep going, and commit every result to the store.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import pytest
from conftest import FileServer

import benchlab
from benchlab import Status
from benchlab.store import open_store
from benchlab.zoo import ZOO
from benchlab.exporting.cache import model_fingerprint

GOOD = """
import sys
for i in range(int(sys.argv[1])):
    print('PyTorchObserver {"type": "NET", "metric": "latency", "unit": "us", "value": "%d"}'
          % (1000 + i))
    print('PyTorchObserver {"type": "conv", "metric": "latency", "unit": "us", "value": 400}')
"""
SPLIT = """
import sys
for i in range(int(sys.argv[1])):
    print('PyTorchObserver {"type": "NET", "metric": "latency", "unit": "us", "value": %d}'
          % (1000 if i % 2 else 2000))
"""
CRASH = "import os\nprint('about to crash', flush=True)\nos.abort()\n"
FAIL = "import sys\nsys.exit('the runtime rejected the model')\n"
HANG = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])
open(sys.argv[1], 'w').write(str(child.pid))
time.sleep(300)
"""
OOM = "blob = bytearray(3 * 1024**3)\nprint('allocated', len(blob))\n"
GARBAGE = """
print('PyTorchObserver {this is not json')
print('PyTorchObserver {"type": "NET", "metric": "latency", "value": "fast"}')
print('random chatter without any metric')
"""


def is_running(pid: int) -> bool:
    """True unless the process is gone or a zombie (this sandbox's init may never reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def write_spec(tmp_path: Path, tests: list[dict[str, object]], name: str = "sweep") -> Path:
    """A FAI-PEP style spec whose model file is one of the scripts."""
    scripts = {"good": GOOD, "crash": CRASH, "fail": FAIL, "hang": HANG, "oom": OOM,
               "garbage": GARBAGE, "split": SPLIT}
    files = {}
    for key, body in scripts.items():
        path = tmp_path / f"{key}.py"
        path.write_text(textwrap.dedent(body))
        files[key] = {"location": path.name, "md5": hashlib.md5(path.read_bytes()).hexdigest()}
    spec = {"model": {"name": name, "format": "script", "files": files}, "tests": tests}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec))
    return path


def run(spec: Path, tmp_path: Path, **kwargs: object) -> benchlab.Results:
    return benchlab.run(
        [spec], db=tmp_path / "results.db", cache_dir=tmp_path / "cache", **kwargs
    )


def test_failures_are_isolated_and_recorded(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    tests = [
        {"identifier": "good", "iter": 7, "commands": ["{PYTHON} {files.good} 7"]},
        {"identifier": "crash", "commands": ["{PYTHON} {files.crash}"]},
        {"identifier": "fail", "commands": ["{PYTHON} {files.fail}"]},
        {"identifier": "hang", "timeout": 2, "commands": [f"{{PYTHON}} {{files.hang}} {pidfile}"]},
        {"identifier": "oom", "memory_limit": 512, "commands": ["{PYTHON} {files.oom}"]},
        {"identifier": "garbage", "commands": ["{PYTHON} {files.garbage}"]},
        {"identifier": "after", "iter": 3, "commands": ["{PYTHON} {files.good} 3"]},
    ]
    results = run(write_spec(tmp_path, tests), tmp_path, json_dir=tmp_path / "json")
    by_test = {r.identity.test_identifier: r for r in results}
    assert list(by_test) == ["good", "crash", "fail", "hang", "oom", "garbage", "after"]

    good = by_test["good"]
    assert good.status is Status.OK
    # Every NET sample kept, in order, beside every per-op sample (FAI-PEP dropped some).
    assert good.samples_of("NET latency") == [1000.0 + i for i in range(7)]
    assert len(good.samples_of("conv latency")) == 7
    assert good.summaries["NET latency"].p50 == 1003.0

    crash = by_test["crash"]
    assert crash.status is Status.FAILED and "SIGABRT" in (crash.error or "")
    assert by_test["fail"].status is Status.FAILED
    assert "the runtime rejected the model" in (by_test["fail"].error or "")
    assert "the runtime rejected the model" in (by_test["fail"].stderr_tail or "")

    hang = by_test["hang"]
    assert hang.status is Status.TIMEOUT and "process group was killed" in (hang.error or "")
    # The whole group went, not just the direct child.
    assert not is_running(int(pidfile.read_text()))

    oom = by_test["oom"]
    assert oom.status is Status.FAILED and "MemoryError" in (oom.stderr_tail or "")
    garbage = by_test["garbage"]
    assert garbage.status is Status.FAILED and "malformed" in (garbage.error or "")
    assert by_test["after"].status is Status.OK  # the sweep went on after every failure

    assert results.exit_code == 1 and len(results.failed) == 5
    with open_store(tmp_path / "results.db") as store:
        stored = store.results(results.run_id)
    assert {r.identity.test_identifier: r.status for r in stored} == {
        k: v.status for k, v in by_test.items()
    }
    assert len(list((tmp_path / "json").rglob("*.json"))) == 7


def test_environment_and_details_are_recorded(tmp_path: Path) -> None:
    tests = [{"identifier": "good", "iter": 3, "repeat": 2,
              "commands": ["{PYTHON} {files.good} 3"]}]
    (result,) = run(write_spec(tmp_path, tests), tmp_path)
    env = result.environment
    assert env["cpu_count"] >= 1 and env["python"]
    # One reader of device state on every target: the probe, before and after the job.
    assert env["state_before"]["complete"] and env["state_after"]["complete"]
    assert "governors" not in env and "after" not in env
    assert result.details["repetitions"] == 2
    assert {s.repetition for s in result.samples} == {0, 1}
    assert result.details["job_stop_reason"] == "fixed_repetitions"


def test_target_ci_adds_processes_until_tight_or_out_of_time(tmp_path: Path) -> None:
    tests = [{"identifier": "split", "iter": 6, "commands": ["{PYTHON} {files.split} 6"]}]
    spec = write_spec(tmp_path, tests)
    # Half the values are 1000 and half 2000: the median's CI can never get within 0.01%.
    tight = run(spec, tmp_path, overrides=benchlab.TestOverrides(target_ci=1e-4),
                time_budget=1.0)[0]
    assert tight.details["job_stop_reason"] == "time_budget_exhausted"
    assert tight.details["repetitions"] >= 2
    loose = run(spec, tmp_path, overrides=benchlab.TestOverrides(target_ci=0.6))[0]
    assert loose.details["job_stop_reason"] == "target_ci_reached"


def test_bad_and_truncated_artifacts_fail_their_job_only(
    tmp_path: Path, server: FileServer
) -> None:
    server.files["/model.bin"] = b"real model bytes"
    spec = {
        "model": {"name": "remote", "format": "bin", "files": {
            "model": {"location": server.url("/model.bin"),
                      "sha256": hashlib.sha256(b"something else").hexdigest()}}},
        "tests": [{"identifier": "t", "commands": ["cat {files.model}"]}],
    }
    truncated = {
        "model": {"name": "truncated", "format": "bin", "files": {
            "model": {"location": server.url("/truncated/model.bin"),
                      "sha256": hashlib.sha256(b"x" * 1000).hexdigest()}}},
        "tests": [{"identifier": "t", "commands": ["cat {files.model}"]}],
    }
    paths = []
    for name, body in (("corrupt", spec), ("truncated", truncated)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(body))
        paths.append(path)
    results = benchlab.run(paths, db=tmp_path / "r.db", cache_dir=tmp_path / "cache")
    corrupt, cut = results
    assert corrupt.status is Status.USER_ERROR and "sha256" in (corrupt.error or "")
    assert cut.status is Status.FAILED and "100 of 1000" in (cut.error or "")
    assert server.requests["/model.bin"] == 2  # one re-download, then the clear error
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()
                and not p.name.startswith(".")]


@pytest.mark.slow
def test_zoo_model_on_pytorch_and_onnxruntime(tmp_path: Path, zoo_cache_dir: Path) -> None:
    overrides = benchlab.TestOverrides(iter=5, min_time=0.0, repeat=1, warmup=1, profile_ops=True)
    results = benchlab.run(
        models=["mlp"], frameworks=["pytorch", "onnxruntime"], db=tmp_path / "r.db",
        cache_dir=zoo_cache_dir, overrides=overrides,
    )
    configs = {(r.identity.framework, r.identity.framework_config.get("mode")) for r in results}
    assert configs == {("pytorch", "eager"), ("pytorch", "torchscript"), ("pytorch", "export"),
                       ("onnxruntime", None)}
    for result in results:
        assert result.status is Status.OK, result.error
        assert len(result.samples_of("NET latency")) == 5
        for key in ("NET load_time", "NET first_inference", "NET memory_peak"):
            assert key in result.summaries
        ops = [k for k in result.summaries if not k.startswith("NET ")]
        assert ops, "per-operator times were asked for"
    frame = results.to_dataframe()
    assert {"model", "framework", "p50", "ci_low", "ci_high"} <= set(frame.columns)
    # A second run exports nothing: mlp's files come from the artifact cache. (Other workers
    # may add other models to this shared cache meanwhile: only mlp's entries are compared.)
    def mlp_entries() -> dict[str, object]:
        index = json.loads((zoo_cache_dir / "zoo-index.json").read_text())
        return {key: entry for key, entry in index["formats"].items()
                if key.startswith(model_fingerprint(ZOO["mlp"]) + "|")}

    def mtimes(entries: dict[str, object]) -> dict[str, int]:
        return {f["path"]: Path(f["path"]).stat().st_mtime_ns
                for entry in entries.values() for f in entry["files"].values()}

    before = mlp_entries()
    assert before and mtimes(before)
    benchlab.run(models=["mlp"], frameworks=["onnxruntime"], db=tmp_path / "r.db",
                 cache_dir=zoo_cache_dir, overrides=overrides)
    assert mlp_entries() == before
    assert mtimes(mlp_entries()) == mtimes(before)
