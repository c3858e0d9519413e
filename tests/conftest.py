"""Fixtures shared across the test suite: a loopback HTTP file server, tiny model files, the
remote devices (an ssh board on loopback, the stand-in phone), and the record of which
machine-dependent case each test took (see machine_facts.py)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import machine_facts
from exclusive import file_lock, one_heavy_setup, workers_folder
from process_state import TorchSettings
import pytest
import tiny_models
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.lab.localpg import PostgresServer, PostgresUnavailable, find_pg_bin
from benchlab.spec.artifacts import default_cache_dir
from benchlab_standin import StandinPhone
from benchlab_standin.adbserver import AdbServer, isolated_adb_server
from benchlab_standin.board import LoopbackBoard, find_sshd

# A test that needs PostgreSQL or the browser fails the run when it skips, unless
# --allow-skip names the dependency (required_deps.py); tests marked exclusive run with no
# other test beside them (exclusive.py); the run is held to a budget of costly processes
# (suite_budget.py); what the tests must build once per machine is built before they start
# (prebuild.py).
pytest_plugins = ["required_deps", "exclusive", "suite_budget", "prebuild"]

# Workers for ``-n auto``: one more than the cores, at most this many. A quarter of the suite's
# time is spent waiting (on sleeps, servers, other processes' locks) with the CPU idle: on 2
# cores, 3 workers ran the suite in 620 s against 731 s with 2 (docs/performance.md §15). Each
# worker imports the runtimes (1-2 GiB with torch), hence the cap.
MAX_WORKERS = 6

_CASES = pytest.StashKey[list[tuple[str, str]]]()
_TORCH_LEAKS = pytest.StashKey[list[tuple[str, list[str]]]]()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads the number given there
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0)) + 1))


def pytest_report_header(config: pytest.Config) -> list[str]:
    return machine_facts.header_lines()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-int8-baseline", action="store_true",
                     help="record the measured int8 SQNR in tests/zoo/data/int8_baseline.json")


# Tests record these in their reports' user properties, so that the process printing the
# summary (under pytest-xdist the controller, which runs no test) reads them from the reports.
_MACHINE_CASE = "machine_case"
_TORCH_LEAK = "torch_settings_changed"


class _ReportedFacts:
    """The machine cases taken and the torch settings leaked, read from the test reports."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            # A property set during the call is carried by the teardown report too.
            if key == _MACHINE_CASE and report.when == "call":
                self.config.stash[_CASES].append((report.nodeid, value))
            elif key == _TORCH_LEAK and report.when == "teardown":
                self.config.stash[_TORCH_LEAKS].append((report.nodeid, value))


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_CASES] = []
    config.stash[_TORCH_LEAKS] = []
    config.pluginmanager.register(_ReportedFacts(config), "reported_facts")


@pytest.fixture(autouse=True)
def _torch_settings_restored(request: pytest.FixtureRequest) -> Iterator[None]:
    """Give every test the torch settings the one before it found (see process_state.py)."""
    before = TorchSettings.read()
    yield
    if before is None:
        return
    now = TorchSettings.read()
    assert now is not None
    changes = before.changed(now)
    if changes:
        before.restore()
        request.node.user_properties.append((_TORCH_LEAK, changes))


@pytest.fixture
def machine_case(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Call it with the case a machine-dependent test took; the session summary lists them."""

    def record(case: str) -> None:
        request.node.user_properties.append((_MACHINE_CASE, case))
        print(f"machine case: {case}")

    return record


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    cases = terminalreporter.config.stash.get(_CASES, [])
    if cases:
        terminalreporter.section("machine-dependent cases taken")
        for nodeid, case in cases:
            terminalreporter.write_line(f"{nodeid}: {case}")
    leaks = terminalreporter.config.stash.get(_TORCH_LEAKS, [])
    if leaks:
        terminalreporter.section("torch settings changed by a test (put back after it)")
        for nodeid, changes in leaks:
            terminalreporter.write_line(f"{nodeid}: {'; '.join(changes)}")


@dataclass
class FileServer:
    """A loopback HTTP server whose served files and request counts tests can read and change."""

    base_url: str
    files: dict[str, bytes] = field(default_factory=dict)
    requests: Counter[str] = field(default_factory=Counter)

    def url(self, path: str) -> str:
        return self.base_url + path


@pytest.fixture
def server() -> Iterator[FileServer]:
    state = FileServer(base_url="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            state.requests[self.path] += 1
            if self.path.startswith("/truncated/"):
                # Promise 1000 bytes, send 100, hang up: HTTP/1.0 closes after the handler.
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                self.wfile.write(b"x" * 100)
                return
            body = state.files.get(self.path)
            if body is None:
                self.send_error(404, "no such file")
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture(scope="session")
def onnx_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny ONNX model, written once per session."""
    return tiny_models.write_onnx(tmp_path_factory.mktemp("onnx") / "tiny.onnx")


@dataclass(frozen=True)
class ZooExport:
    """One zoo model exported into a cache of the session's: the cache and its files."""

    cache_dir: Path
    files: dict[str, Path]


@pytest.fixture(scope="session")
def run_shared_dir(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Path:
    """A folder shared by every worker of this test run (and by no other run).

    Under pytest-xdist each worker has its own session fixtures; what they build here is built
    once for all of them, where building it is safe to share (the zoo's export cache holds a
    lock per model, so a second worker waits for the first one's export and reuses it).
    """
    folder = (workers_folder(pytestconfig) or tmp_path_factory.getbasetemp()) / "shared"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def build_once(run_shared_dir: Path) -> Callable[[str, Callable[[Path], None]], Path]:
    """``build_once(name, make)``: the folder ``name`` of this run, filled by ``make(folder)``
    in whichever worker asks first; the others wait for it and reuse it. For a session
    fixture's files that every worker would otherwise build again (a model export)."""

    def build(name: str, make: Callable[[Path], None]) -> Path:
        folder = run_shared_dir / name
        done = folder / ".built"
        with file_lock(run_shared_dir / f"{name}.lock"):
            if not done.exists():
                shutil.rmtree(folder, ignore_errors=True)  # a failed build's leftovers
                folder.mkdir()
                make(folder)
                done.touch()
        return folder

    return build


def _zoo_cache_in(shared: Path) -> Path:
    return shared / "zoo-cache"


@pytest.fixture(scope="session")
def zoo_cache_dir(run_shared_dir: Path) -> Path:
    """The artifact cache the zoo's models are exported into once per test run, for the tests
    that measure exported models rather than test the export itself. Its programs built for
    devices are benchlab's own cache's, where prebuild.py built them before the tests."""
    cache = _zoo_cache_in(run_shared_dir)
    cache.mkdir(exist_ok=True)
    machine_tools = device_tools_dir(default_cache_dir())
    machine_tools.mkdir(parents=True, exist_ok=True)
    try:
        device_tools_dir(cache).symlink_to(machine_tools, target_is_directory=True)
    except FileExistsError:
        pass  # another worker linked it
    return cache


#: Fixture → the zoo models its tests take from the shared cache, exported in the background
#: as a parallel run starts (:func:`_shared_exports_begun`), each to the formats the tests
#: read (None: every format). Only ONNX Runtime runs the transformer from the shared cache
#: (tests/test_matrix_e2e.py); its other formats cost 33 CPU s that no test used.
PREFETCHED: dict[str, dict[str, tuple[str, ...] | None]] = {
    "llama_15m_export": {"llama_15m": None},
    "zoo_cache_dir": {"mlp": None, "convnet": None, "transformer": ("onnx", "onnx_int8")},
}


@pytest.fixture(scope="session", autouse=True)
def _shared_exports_begun(request: pytest.FixtureRequest, pytestconfig: pytest.Config,
                          run_shared_dir: Path) -> Iterator[None]:
    """Under xdist, begin the shared cache's exports in a background thread of each worker.

    A test that needs a model another worker is exporting would wait on the model's lock with
    its worker idle (40 s for llama_15m). Begun at once, each export runs beside the first
    tests instead, and each worker starts on other models (the order is rotated), so the two
    threads split the work. Only the models the collected tests' fixtures take are exported;
    a run in one process skips this (a developer running a few tests waits for nothing more).
    An export that fails here fails again in the test that needs it, with its reason. (It takes
    the shared folder, not ``zoo_cache_dir``: as an autouse fixture, whatever it takes would
    count as taken by every test.)
    """
    workerinput = getattr(pytestconfig, "workerinput", None)
    used = {name for item in request.session.items
            for name in getattr(item, "fixturenames", ())}
    models = [(name, formats) for fixture, wanted in PREFETCHED.items() if fixture in used
              for name, formats in wanted.items()]
    if workerinput is None or not models:
        yield
        return
    from benchlab.spec.artifacts import ArtifactCache
    from benchlab.zoo import export_models

    index = int(workerinput["workerid"].removeprefix("gw") or 0)
    shift = (index * len(models) // 2) % len(models)
    order = models[shift:] + models[:shift]

    def export_each() -> None:
        for name, formats in order:
            try:
                # One background export at a time across the workers: three at once beside
                # three workers' tests overloaded two cores as the run began.
                with one_heavy_setup(pytestconfig):
                    export_models([name], ArtifactCache(_zoo_cache_in(run_shared_dir)),
                                  workers=1, formats=formats)
            except Exception:  # noqa: BLE001 - the test that needs it reports it
                pass

    thread = threading.Thread(target=export_each, name="shared-exports", daemon=True)
    thread.start()
    yield
    thread.join()  # an export process outliving the worker would run on unowned


@pytest.fixture(scope="session")
def llama_15m_export(zoo_cache_dir: Path) -> ZooExport:
    """The zoo's llama_15m exported once per test run to every format it takes here (ONNX,
    int8 ONNX, ExecuTorch, GGUF): its export process takes about two minutes, which the
    generative tests, the llama.cpp and ExecuTorch tests and the bench smoke test share."""
    from benchlab.spec.artifacts import ArtifactCache
    from benchlab.zoo import export_models

    (export,) = export_models(["llama_15m"], ArtifactCache(zoo_cache_dir))
    return ZooExport(zoo_cache_dir, {key: path for key, (path, _) in export.files.items()})


@pytest.fixture(scope="session")
def torchscript_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny traced TorchScript model, written once per session."""
    return tiny_models.write_torchscript(tmp_path_factory.mktemp("ts") / "tiny.pt")


@pytest.fixture(scope="session")
def entry_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python file with a factory that builds a tiny eager model."""
    return tiny_models.write_entry(tmp_path_factory.mktemp("entry") / "tiny_entry.py")


@pytest.fixture(scope="session")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackBoard]:
    """An OpenSSH server on 127.0.0.1 with its own keys, and a client config naming it."""
    if find_sshd() is None:
        pytest.skip("sshd is not installed (apt-get install openssh-server)")
    with LoopbackBoard(Path(tmp_path_factory.mktemp("board"))) as running:
        yield running


@pytest.fixture(scope="module")
def phone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StandinPhone, AdbServer]]:
    """The stand-in phone, connected to an adb server of its own (one per test module)."""
    if shutil.which("adb") is None:
        pytest.skip("the adb client is not installed (apt-get install adb)")
    with StandinPhone(tmp_path_factory.mktemp("phone") / "device") as standin, \
            isolated_adb_server() as server:
        server.connect(standin.serial)
        yield standin, server


def _default_adb_server_up() -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", 5037)) == 0


@pytest.fixture(scope="session", autouse=True)
def _no_stray_adb_server() -> Iterator[None]:
    """``benchlab doctor`` lists phones through the default adb server, which ``adb`` starts on
    demand; stop it after the session if the tests were the ones that started it."""
    was_up = _default_adb_server_up()
    yield
    if not was_up and shutil.which("adb") and _default_adb_server_up():
        subprocess.run(["adb", "kill-server"], capture_output=True, timeout=30, check=False)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session; skips when its binaries are missing."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    try:
        server = PostgresServer(bin_dir)
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    server.start()
    try:
        yield server
    finally:
        server.stop()
