"""``benchlab run --report-to URL``: send each finished result to a lab server as it is stored.

The reporter rides on :func:`benchlab.api.run`'s hooks: ``on_run`` learns the run, and
``on_result`` posts each result (``POST /api/v1/results``) right after it is stored locally.
It never raises into the benchmark: the local store is the record, the lab a copy.

What happens to a result the lab does not take:

* a network error, a 5xx, 408 or 429 is retried a few times with a short backoff; if it still
  fails, the result is *spooled*: written atomically into the spool directory, one file per
  (run, job key), so spooling the same result twice keeps one file. The server then counts as
  offline for a while, so a sweep against a dead lab does not wait on every result;
* a 401 (unknown or revoked token) is not retried: the result is spooled, counted as rejected,
  and nothing more is sent this session; a run with a good token sends the spool;
* any other 4xx (a malformed result, a worker token posting for another host's device) is not
  retried either: the result goes into ``rejected/`` under the spool directory with the
  server's message, and is never re-sent on its own (move a file back to re-send it).

The spool is delivered, oldest first, when the next run starts and at :meth:`Reporter.close`;
each file is deleted only after the lab acknowledged it. The lab's store keeps one result per
(run, job key), so a result delivered twice (a crash between the reply and the delete) is
stored once.

When the run ends, :meth:`Reporter.close` tells the lab how (``POST
/api/v1/runs/<uuid>/finish``: finished, or interrupted), but only for a run the lab holds a
result of from this reporter. A lab that cannot take it (an older server answers 404, or it is
unreachable) does not fail the run: the summary says so, and the lab keeps showing the run as
running until it counts as abandoned.

The token comes from the ``token`` argument, else ``BENCHLAB_LAB_TOKEN``, else
``~/.config/benchlab/lab.toml`` (``[report] token = "..."``, used only when that file names no
other ``url``). It travels only in the ``Authorization`` header and never appears in a
message, a file or a log line.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx

from benchlab.errors import UsageError
from benchlab.lab.userconfig import config_path
from benchlab.schema.result import Result

if TYPE_CHECKING:  # the store (SQLAlchemy) is imported only where a run is read
    from benchlab.store import RunRecord

__all__ = [
    "TOKEN_ENV",
    "ReportSummary",
    "ReportedRun",
    "Reporter",
    "config_path",
    "default_spool_dir",
    "resolve_token",
    "store_run_info",
]

TOKEN_ENV = "BENCHLAB_LAB_TOKEN"
"""The environment variable a reporter reads its token from."""

RESULTS_PATH = "/api/v1/results"
FINISH_PATH = "/api/v1/runs/{uuid}/finish"
_REJECTED = "rejected"
_OFFLINE_S = 60.0  # after a delivery failed for good, spool without trying for this long
_RETRIED_STATUSES = frozenset({408, 429})


@dataclass(frozen=True)
class ReportedRun:
    """The run a reported result belongs to, as the machine that ran it recorded it: the ``run``
    member of a post, which the lab's ingest endpoint validates as this same dataclass.

    The part of a :class:`~benchlab.store.RunRecord` that means the same in another store (its
    id, status and counts are the local store's): each field is the record's field of the same
    name, and :meth:`of` copies them by name, so the two cannot drift apart unnoticed.
    """

    uuid: str
    """The run's UUID where it ran; the lab keeps it."""
    fingerprint: str = ""
    description: str = ""
    host: str = ""
    created_at: str | None = None

    @classmethod
    def of(cls, record: RunRecord) -> ReportedRun:
        """The reported part of a stored run."""
        return cls(**{field.name: getattr(record, field.name) for field in fields(cls)})

    def to_json(self) -> dict[str, Any]:
        """The ``run`` member of a post."""
        return asdict(self)


@dataclass(frozen=True)
class ReportSummary:
    """What a reporter did: results delivered, refused, and still waiting in the spool."""

    url: str
    delivered: int
    spooled: int
    rejected: int
    spool_dir: Path
    problems: tuple[str, ...] = ()
    run_uuid: str | None = None
    """The run the lab was told the end of (or tried to be); None when it was not reported."""
    finished_as: str | None = None
    """How the lab now records that run's end (``finished``, ``interrupted``)."""
    finish_problem: str = ""
    """Why the lab could not record the run's end."""

    @property
    def rejected_dir(self) -> Path:
        """Where results the lab refused for good are kept, with the lab's message."""
        return self.spool_dir / _REJECTED

    def lines(self) -> list[str]:
        """Sentences for the end of ``benchlab run``."""
        out = [f"reported {self.delivered} result{'s' * (self.delivered != 1)} to {self.url}"]
        if self.spooled:
            many = self.spooled != 1
            out.append(f"{self.spooled} result{'s' * many} spooled in {self.spool_dir}; "
                       f"{'they are' if many else 'it is'} sent on the next run with --report-to")
        if self.rejected:
            out.append(f"{self.rejected} result{'s' * (self.rejected != 1)} refused by the lab "
                       f"(kept in {self.spool_dir}): " + "; ".join(self.problems[-3:]))
        if self.finished_as:
            out.append(f"the lab records run {self.run_uuid} as {self.finished_as}")
        elif self.finish_problem:
            out.append(f"could not tell the lab that run {self.run_uuid} ended "
                       f"({self.finish_problem}); the run's results are there, but the lab "
                       "shows it as running until it counts as abandoned")
        return out


@dataclass(frozen=True)
class _Outcome:
    """How one post went: ``delivered``, ``retry`` (transient), ``auth`` or ``rejected``."""

    kind: str
    message: str = ""


def _same_server(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def resolve_token(url: str, token: str | None = None, *,
                  environ: Mapping[str, str] | None = None,
                  config: Path | None = None) -> str:
    """The token to send to ``url``: the argument, else the environment, else the config file.

    The config file's token is used only if the file names no ``url`` or names this one, so
    a token meant for one lab is not sent to another. None found is a :class:`UsageError`.
    ``environ`` (default :data:`os.environ`) is only read.
    """
    if token:
        return token
    env = os.environ if environ is None else environ
    if env.get(TOKEN_ENV):
        return env[TOKEN_ENV]
    path = config or config_path(env)
    if path.is_file():
        try:
            section = tomllib.loads(path.read_text()).get("report", {})
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {path}: {exc}") from None
        configured = section.get("url") if isinstance(section, dict) else None
        found = section.get("token") if isinstance(section, dict) else None
        if isinstance(found, str) and found and (
                not configured or _same_server(str(configured), url)):
            return found
    raise UsageError(f"--report-to needs a lab token with the 'report' scope: set {TOKEN_ENV} "
                     f"or put [report] token = \"...\" in {path}")


def default_spool_dir(url: str, environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/benchlab/spool/<host>-<port>/`` (or under ``~/.cache``)."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    parsed = httpx.URL(url)
    name = f"{parsed.host or 'lab'}-{parsed.port or (443 if parsed.scheme == 'https' else 80)}"
    return base / "benchlab" / "spool" / "".join(c if c.isalnum() or c in ".-" else "_"
                                                 for c in name)


def store_run_info(db: str | Path | None) -> Callable[[str], ReportedRun]:
    """A ``run_info`` for :class:`Reporter` that reads the run from the local store ``db``."""

    def read(run_uuid: str) -> ReportedRun:
        from benchlab.store import open_store

        with closing(open_store(db)) as store:
            run = store.get_run(run_uuid)
        return ReportedRun.of(run)

    return read


def _stderr(line: str) -> None:
    print(f"benchlab: report: {line}", file=sys.stderr, flush=True)


def _server_message(response: httpx.Response) -> str:
    """The lab's ``detail`` (FastAPI's error body), else the start of the body."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    text = detail if isinstance(detail, str) else json.dumps(detail) if detail else \
        response.text[:300]
    return f"HTTP {response.status_code}: {text}"


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write JSON so that a reader (or a crash) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, default=str)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class Reporter:
    """Posts results to a lab server as a run stores them; see the module's docstring.

    Hand :meth:`on_run` and :meth:`on_result` to :func:`benchlab.api.run`, then call
    :meth:`close` (or use it as a context manager) for the :class:`ReportSummary`.
    ``run_info`` maps a run UUID to the run's facts (fingerprint, description, host); without
    it the lab records the run with its UUID only. ``backoff`` holds the pauses between
    attempts (its last value repeats); ``retries`` is the attempts after the first.
    """

    def __init__(self, url: str, token: str | None = None, spool_dir: Path | None = None,
                 timeout: float = 10.0, retries: int = 3, *,
                 backoff: Sequence[float] = (0.5, 1.0, 2.0),
                 run_info: Callable[[str], ReportedRun] | None = None,
                 log: Callable[[str], None] = _stderr,
                 environ: Mapping[str, str] | None = None) -> None:
        """Check the URL and find the token now, so a bad setup fails before the run."""
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError):
            parsed = httpx.URL("invalid:")
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise UsageError(f"--report-to needs an http(s) URL of a lab server, not {url!r}")
        if parsed.userinfo or parsed.query:
            # Credentials belong in the header; a URL ends up in logs and messages.
            raise UsageError("give the lab's URL without credentials or a query; the token "
                             f"comes from {TOKEN_ENV} or the config file")
        self.url = url.rstrip("/")
        self._token = resolve_token(self.url, token, environ=environ)
        self.spool_dir = spool_dir or default_spool_dir(self.url, environ)
        self._retries = max(0, retries)
        self._backoff = tuple(backoff) or (0.0,)
        self._run_info = run_info
        self._log = log
        self._client = httpx.Client(timeout=timeout, headers={
            "Authorization": f"Bearer {self._token}", "User-Agent": "benchlab-reporter"})
        self._run: ReportedRun | None = None
        self._delivered = 0
        self._rejected = 0
        self._problems: list[str] = []
        self._offline_until = 0.0
        self._auth_failed = False
        self._closed = False
        self._reported: set[str] = set()  # runs the lab holds a result of from this reporter
        self._finished_as: str | None = None
        self._finish_problem = ""

    # The hooks

    def on_run(self, run_uuid: str) -> None:
        """Remember the run whose results follow; send what earlier runs left in the spool."""
        info = ReportedRun(run_uuid)
        if self._run_info is not None:
            try:
                info = self._run_info(run_uuid)
            except Exception as exc:  # noqa: BLE001 - the run goes on; the lab gets the UUID
                self._say(f"could not read run {run_uuid}'s details ({exc}); "
                          "reporting it by UUID only")
        self._run = info
        self._auto_flush()

    def on_result(self, result: Result) -> None:
        """Post one stored result; on failure keep it in the spool. Never raises."""
        try:
            self._report(result)
        except Exception as exc:  # noqa: BLE001 - a reporter must not break the benchmark
            self._say(f"could not report {result.identity.label}: {exc}")

    def flush(self) -> int:
        """Send every spooled result, oldest first, deleting each once the lab took it.

        Stops at the first transient failure (the lab is still away). Returns how many
        were delivered. Never raises.
        """
        delivered = 0
        try:
            for path in self._spooled():
                try:
                    payload = json.loads(path.read_text())
                    body = {"run": payload["run"], "result": payload["result"]}
                except FileNotFoundError:
                    continue  # another benchlab run sharing this spool sent it meanwhile
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    self._reject(path, None, f"unreadable spool file: {exc}")
                    continue
                outcome = self._post(body, attempts=1)
                if outcome.kind == "delivered":
                    path.unlink(missing_ok=True)
                    delivered += 1
                    with contextlib.suppress(KeyError, TypeError):
                        self._reported.add(str(body["run"]["uuid"]))
                elif outcome.kind == "rejected":
                    self._reject(path, body, outcome.message)
                else:
                    self._went_away(outcome)
                    break
        except Exception as exc:  # noqa: BLE001 - same promise as on_result
            self._say(f"could not send the spool: {exc}")
        self._delivered += delivered
        if delivered:
            self._say(f"sent {delivered} spooled result{'s' * (delivered != 1)} to {self.url}")
        return delivered

    def close(self, status: str = "finished") -> ReportSummary:
        """Send the spool once more, tell the lab the run ended as ``status`` (``finished``
        or ``interrupted``) if it holds the run, release the connection, and say what
        happened. Never raises for the lab's sake."""
        if status not in ("finished", "interrupted"):
            raise ValueError(f"a run ends as 'finished' or 'interrupted', not {status!r}")
        if not self._closed:
            if not self._auth_failed:
                self.flush()
            if self._run is not None and self._run.uuid in self._reported:
                try:
                    self._finish(self._run.uuid, status)
                except Exception as exc:  # noqa: BLE001 - the run is over; only say so
                    self._finish_problem = str(exc)
            with contextlib.suppress(Exception):  # closing a socket must not fail the run
                self._client.close()
            self._closed = True
        tried = self._run is not None and self._run.uuid in self._reported
        return ReportSummary(url=self.url, delivered=self._delivered,
                             spooled=sum(1 for _ in self._spooled()), rejected=self._rejected,
                             spool_dir=self.spool_dir, problems=tuple(self._problems),
                             run_uuid=self._run.uuid if tried and self._run else None,
                             finished_as=self._finished_as,
                             finish_problem=self._finish_problem.replace(self._token, "<token>"))

    def __enter__(self) -> Reporter:
        """The reporter; it is closed when the block ends."""
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Close the reporter; a block left by an exception reports the run interrupted."""
        self.close("finished" if exc_type is None else "interrupted")

    # Inside

    def _report(self, result: Result) -> None:
        if self._run is None:
            self._rejected += 1
            self._problems.append(f"{result.identity.label}: no run was announced")
            self._say(f"not reporting {result.identity.label}: no run was announced")
            return
        self._auto_flush()
        body = {"run": self._run.to_json(), "result": result.to_dict()}
        path = self._spool_path(self._run.uuid, result.identity.key)
        if self._auth_failed or time.monotonic() < self._offline_until:
            _write_atomic(path, body)
            return
        outcome = self._post(body, attempts=1 + self._retries)
        if outcome.kind == "delivered":
            self._delivered += 1
            self._reported.add(self._run.uuid)
            path.unlink(missing_ok=True)  # an older copy of this result may sit in the spool
        elif outcome.kind == "rejected":
            self._reject(path, body, outcome.message)
        else:
            _write_atomic(path, body)
            self._went_away(outcome)

    def _finish(self, run_uuid: str, status: str) -> None:
        """Tell the lab how the run ended; remember what it answered for the summary."""
        offline = time.monotonic() < self._offline_until
        outcome = self._post({"status": status}, attempts=1 if offline else 1 + self._retries,
                             path=FINISH_PATH.format(uuid=run_uuid))
        if outcome.kind == "delivered":
            self._finished_as = status
        elif outcome.message == "HTTP 404: Not Found":
            # What a server without the route answers (the framework's own 404 text).
            self._finish_problem = (f"{outcome.message}: a lab server older than this "
                                    "benchlab, without the finish endpoint")
        else:
            self._finish_problem = outcome.message

    def _post(self, body: dict[str, Any], attempts: int, path: str = RESULTS_PATH) -> _Outcome:
        """POST once per attempt, pausing between attempts; classify the last answer."""
        content = json.dumps(body, default=str).encode()
        outcome = _Outcome("retry", "not attempted")
        for attempt in range(attempts):
            if attempt:
                time.sleep(self._backoff[min(attempt - 1, len(self._backoff) - 1)])
            try:
                response = self._client.post(self.url + path, content=content,
                                             headers={"Content-Type": "application/json"})
            except httpx.TransportError as exc:
                # Only the exception's class and text: the request (with its header) is not
                # part of either.
                outcome = _Outcome("retry", f"{type(exc).__name__}: {exc}")
                continue
            if response.is_success:
                return _Outcome("delivered")
            message = _server_message(response)
            if response.status_code >= 500 or response.status_code in _RETRIED_STATUSES:
                outcome = _Outcome("retry", message)
                continue
            return _Outcome("auth" if response.status_code == 401 else "rejected", message)
        return outcome

    def _went_away(self, outcome: _Outcome) -> None:
        if outcome.kind == "auth":
            self._auth_failed = True
            self._rejected += 1
            self._problems.append(outcome.message)
            self._say(f"{self.url} refused the token ({outcome.message}); results are kept "
                      f"in {self.spool_dir} and nothing more is sent this run")
            return
        if time.monotonic() >= self._offline_until:
            self._say(f"{self.url} is unreachable ({outcome.message}); results are kept in "
                      f"{self.spool_dir} and sent later")
        self._offline_until = time.monotonic() + _OFFLINE_S

    def _reject(self, path: Path, body: dict[str, Any] | None, message: str) -> None:
        """Move a result the lab refused for good under ``rejected/``, with the reason."""
        self._rejected += 1
        self._problems.append(message)
        self._say(f"the lab refused a result ({message}); kept in {path.parent / _REJECTED}")
        target = self.spool_dir / _REJECTED / path.name
        if body is None:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
        else:
            _write_atomic(target, {**body, "rejected": message})
            path.unlink(missing_ok=True)

    def _auto_flush(self) -> None:
        if self._auth_failed or time.monotonic() < self._offline_until:
            return
        if any(True for _ in self._spooled()):
            self.flush()

    def _spool_path(self, run_uuid: str, job_key: str) -> Path:
        return self.spool_dir / f"{run_uuid}-{job_key}.json"

    def _spooled(self) -> Iterator[Path]:
        """Spooled results, oldest first."""
        found: list[tuple[int, str, Path]] = []
        try:
            for path in self.spool_dir.glob("*.json"):
                if path.name.startswith(".tmp-"):
                    continue
                with contextlib.suppress(FileNotFoundError):  # sent by a run sharing the spool
                    found.append((path.stat().st_mtime_ns, path.name, path))
        except OSError:
            return iter(())  # no spool directory yet (or an unreadable one: nothing to send)
        return iter(path for _, _, path in sorted(found))

    def _say(self, line: str) -> None:
        # Messages come from servers and exceptions too: make sure none carries the token.
        self._log(line.replace(self._token, "<token>"))

