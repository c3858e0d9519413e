"""Fetch the files a spec needs, verify them against their declared hash, and cache them.

The cache is content-addressed by the *declared* hash: a file whose spec says ``sha256: abc…``
lives at ``<root>/sha256/abc…/<filename>`` (``md5`` when that is the only hash given). The original
file name is kept as the last path component because runtimes pick loaders by extension (``.onnx``,
``.pt``).

Rules, each a fix of a flaw in FAI-PEP's model cache:

* The hash is an integrity check, not just a cache key: every :meth:`ArtifactCache.fetch` re-hashes
  the file it returns, cache hit or not. Models are small next to the time spent benchmarking them,
  and a memo would trust a file someone edited after it was checked.
* A spec is never rewritten. A file that does not match its hash is deleted and downloaded once
  more; if the fresh copy is also wrong, :class:`~benchlab.errors.ArtifactHashMismatch` is raised
  and nothing wrong is left in the cache.
* A download without a hash is refused: we never run a remote file we cannot verify. Only local
  files may go unhashed, and :class:`FetchedArtifact` then says ``verified=False``.

Downloads stream to a uniquely named temporary file in the entry's directory and are moved into
place with :func:`os.replace` only once verified, so readers never see a partial file. On POSIX an
advisory lock per entry serialises processes fetching the same file, so one of them downloads and
the others find a cache hit.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import shutil
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from benchlab.errors import ArtifactHashMismatch, DownloadError, UsageError
from benchlab.spec.types import FileRef

__all__ = [
    "DownloadProgress",
    "ArtifactCache",
    "ArtifactSource",
    "FetchedArtifact",
    "default_cache_dir",
    "md5_of",
    "sha256_of",
]

ArtifactSource = Literal["local", "cache", "download"]
"""Where a fetched file came from: the user's own file, an existing cache entry, or the network."""

_CHUNK = 1 << 20
_HEX_LENGTHS = {"sha256": 64, "md5": 32}
_HEX = re.compile(r"[0-9a-f]+")
# Names an artifact's own filename cannot plausibly take; both are cleaned up under the lock.
_LOCK_NAME = ".benchlab.lock"
_TMP_PREFIX = ".benchlab-tmp-"
_USER_AGENT = "benchlab-artifacts"


if sys.platform == "win32":  # pragma: no cover - benchlab hosts are POSIX

    def _lock_fd(fd: int) -> None:
        """No advisory locks here; temp files plus os.replace still keep entries whole."""

else:
    import fcntl

    def _lock_fd(fd: int) -> None:
        """Block until this process holds the exclusive lock on ``fd`` (released on close)."""
        fcntl.flock(fd, fcntl.LOCK_EX)


@contextmanager
def _held(lock_file: Path) -> Iterator[None]:
    """Hold the exclusive advisory lock on ``lock_file`` (made if missing) for the block."""
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock_fd(fd)
        yield
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class FetchedArtifact:
    """A local file ready to use, and what is known about its content.

    ``sha256`` is always the hash of the bytes at ``path`` as read during this fetch, even when
    the spec declared only an md5 or nothing, so results can name the exact content they measured.
    ``verified`` is false only for a local file whose spec declared no hash.
    """

    path: Path
    sha256: str
    verified: bool
    source: ArtifactSource


class _Retryable(Exception):
    """A download failure that may not happen again (truncation, reset, 5xx, timeout)."""


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Return ``$XDG_CACHE_HOME/benchlab/artifacts``, or ``~/.cache/benchlab/artifacts``.

    ``environ`` defaults to :data:`os.environ`; it is only read. A relative ``XDG_CACHE_HOME`` is
    ignored, as the XDG base directory specification asks.
    """
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "benchlab" / "artifacts"


def sha256_of(path: Path) -> str:
    """Return the lowercase hex SHA-256 of a file, read in chunks."""
    return _hash_file(path, ("sha256",))["sha256"]


def md5_of(path: Path) -> str:
    """Return the lowercase hex MD5 of a file, read in chunks (for legacy specs only)."""
    return _hash_file(path, ("md5",))["md5"]


def _hash_file(path: Path, algorithms: tuple[str, ...]) -> dict[str, str]:
    # One pass computes every hash we need; reading is the expensive part.
    hashers = {name: hashlib.new(name, usedforsecurity=False) for name in algorithms}
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            for hasher in hashers.values():
                hasher.update(chunk)
    return {name: hasher.hexdigest() for name, hasher in hashers.items()}


def _expected_hashes(ref: FileRef) -> dict[str, str]:
    expected: dict[str, str] = {}
    for name, value in (("sha256", ref.sha256), ("md5", ref.md5)):
        if value is None:
            continue
        norm = value.strip().lower()
        if len(norm) != _HEX_LENGTHS[name] or not _HEX.fullmatch(norm):
            raise UsageError(f"file {ref.key!r}: {name} {value!r} is not a valid {name} hex digest")
        expected[name] = norm
    return expected


def _valid_filename(name: str) -> bool:
    return (
        bool(name)
        and name not in (".", "..")
        and not name.startswith((_LOCK_NAME, _TMP_PREFIX))
        and not any(sep in name for sep in ("/", "\\", "\0"))
    )


DownloadProgress = Callable[[str, int], AbstractContextManager[Callable[[int], None]]]
"""Shows one download: called with the file name and its size in bytes, it gives a context
manager whose value is called with each chunk's size."""


class ArtifactCache:
    """Resolves :class:`FileRef` locations to verified local files, caching downloads.

    ``root`` is the cache directory (see :func:`default_cache_dir`), ``root_model_dir`` anchors
    ``//rel/path`` locations, ``progress`` shows downloads of known size (for instance
    :func:`benchlab.report.terminal.download_bar`; none by default), and ``timeout`` bounds
    each network operation in seconds.
    """

    def __init__(
        self,
        root: Path,
        *,
        root_model_dir: Path | None = None,
        progress: DownloadProgress | None = None,
        timeout: float = 60,
    ) -> None:
        self._root = Path(root)
        self._root_model_dir = None if root_model_dir is None else Path(root_model_dir)
        self._progress = progress
        self._timeout = timeout

    @property
    def root(self) -> Path:
        """The cache directory."""
        return self._root

    def fetch(self, ref: FileRef) -> Path:
        """Return a local path whose content matches ``ref``'s declared hash (see fetch_info)."""
        return self.fetch_info(ref).path

    def fetch_info(self, ref: FileRef) -> FetchedArtifact:
        """Resolve ``ref`` to a local file, verifying its declared hashes on every call.

        Remote files (``http``/``https``) are downloaded into the cache; local files (``file://``,
        absolute, ``//`` under ``root_model_dir``, or relative to ``ref.base_dir``) are verified
        where they are and returned unchanged, never copied.

        Raises :class:`UsageError` for a bad location, a missing local file or a remote file
        without a hash; :class:`ArtifactHashMismatch` when the content is wrong (after one
        re-download for remote files); :class:`DownloadError` when the network fails twice or
        the server refuses.
        """
        expected = _expected_hashes(ref)
        location = ref.location.strip()
        scheme = urllib.parse.urlsplit(location).scheme.lower()
        if scheme in ("http", "https"):
            if not expected:
                raise UsageError(
                    f"file {ref.key!r}: remote location {location} declares no sha256 or md5; "
                    "benchlab never uses a download it cannot verify"
                )
            return self._fetch_remote(ref, location, expected)
        return self._fetch_local(ref, self._local_path(ref, location, scheme), expected)

    def put(self, path: Path, *, filename: str | None = None) -> tuple[Path, str]:
        """Copy a locally produced file into the cache under its sha256.

        Returns ``(cached path, sha256)``. Putting the same content under the same name again
        leaves the existing entry untouched.
        """
        source = Path(path)
        if not source.is_file():
            raise UsageError(f"cannot add {source} to the artifact cache: not a regular file")
        name = filename if filename is not None else source.name
        if not _valid_filename(name):
            raise UsageError(f"cannot add {source} to the artifact cache: bad filename {name!r}")
        digest = sha256_of(source)
        entry = self._root / "sha256" / digest
        expected = {"sha256": digest}
        with self._locked(entry):
            final = entry / name
            if final.is_file() and self._matches(final, expected):
                return final, digest
            tmp = self._tmp_path(entry)
            try:
                with open(source, "rb") as src, open(tmp, "wb") as dst:
                    copied = self._copy_hashing(src, dst)
                if copied != digest:
                    raise UsageError(f"{source} changed while it was being added to the cache")
                shutil.copymode(source, tmp)
                os.replace(tmp, final)
            finally:
                tmp.unlink(missing_ok=True)
        return final, digest

    # -- local files ---------------------------------------------------------------------------

    def _local_path(self, ref: FileRef, location: str, scheme: str) -> Path:
        if scheme == "file":
            parts = urllib.parse.urlsplit(location)
            if parts.netloc not in ("", "localhost"):
                raise UsageError(f"file {ref.key!r}: {location} names a remote host")
            return Path(urllib.request.url2pathname(parts.path))
        if location.startswith("//"):
            if self._root_model_dir is None:
                raise UsageError(
                    f"file {ref.key!r}: location {location} is relative to the root model "
                    "directory, but none was given"
                )
            return self._root_model_dir / location[2:]
        # A one-letter "scheme" is a Windows drive, not a URL.
        if len(scheme) > 1:
            raise UsageError(f"file {ref.key!r}: unsupported location scheme in {location}")
        path = Path(location).expanduser()
        return path if path.is_absolute() else Path(ref.base_dir) / path

    def _fetch_local(self, ref: FileRef, path: Path, expected: dict[str, str]) -> FetchedArtifact:
        if not path.is_file():
            what = "does not exist" if not path.exists() else "is not a regular file"
            raise UsageError(f"file {ref.key!r}: {path} (from {ref.location}) {what}")
        actual = _hash_file(path, tuple({"sha256", *expected}))
        # A local file reads the same bytes again, so there is nothing to retry.
        self._raise_on_mismatch(ref, expected, actual)
        return FetchedArtifact(path, actual["sha256"], bool(expected), "local")

    # -- remote files --------------------------------------------------------------------------

    def _fetch_remote(self, ref: FileRef, url: str, expected: dict[str, str]) -> FetchedArtifact:
        filename = self._filename_for(ref, url)
        algorithm = "sha256" if "sha256" in expected else "md5"
        entry = self._root / algorithm / expected[algorithm]
        with self._locked(entry):
            final = entry / filename
            bad_copies = 0
            if final.is_file():
                actual = self._matches(final, expected)
                if actual:
                    return FetchedArtifact(final, actual["sha256"], True, "cache")
                final.unlink()
                bad_copies += 1
            else:
                reused = self._reuse_sibling(entry, final, expected)
                if reused is not None:
                    return FetchedArtifact(final, reused, True, "cache")
            failure: Exception | None = None
            for _attempt in range(2):
                try:
                    tmp = self._download(ref, url, entry, filename)
                except _Retryable as exc:
                    failure = DownloadError(f"cannot download file {ref.key!r} from {url}: {exc}")
                    continue
                try:
                    actual = _hash_file(tmp, tuple({"sha256", *expected}))
                    try:
                        self._raise_on_mismatch(ref, expected, actual)
                    except ArtifactHashMismatch as exc:
                        bad_copies += 1
                        if bad_copies >= 2:
                            raise
                        failure = exc
                        continue
                    os.replace(tmp, final)
                finally:
                    tmp.unlink(missing_ok=True)
                return FetchedArtifact(final, actual["sha256"], True, "download")
            assert failure is not None
            raise failure

    def _download(self, ref: FileRef, url: str, entry: Path, filename: str) -> Path:
        request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
        try:
            response = urllib.request.urlopen(request, timeout=self._timeout)
        except urllib.error.HTTPError as exc:
            reason = f"HTTP {exc.code} {exc.reason}"
            exc.close()
            if exc.code >= 500:
                raise _Retryable(reason) from exc
            raise DownloadError(f"cannot download file {ref.key!r} from {url}: {reason}") from exc
        except urllib.error.URLError as exc:
            raise _Retryable(str(exc.reason)) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise _Retryable(str(exc) or type(exc).__name__) from exc
        tmp = self._tmp_path(entry)
        try:
            with response, open(tmp, "wb") as out:
                total = _content_length(response.headers.get("Content-Length"))
                with self._progress_bar(filename, total) as advance:
                    received = 0
                    while chunk := response.read(_CHUNK):
                        out.write(chunk)
                        received += len(chunk)
                        advance(len(chunk))
            # http.client returns b"" rather than raising when a server hangs up early.
            if total is not None and received < total:
                raise _Retryable(f"connection closed after {received} of {total} bytes")
        except (OSError, http.client.HTTPException) as exc:
            tmp.unlink(missing_ok=True)
            raise _Retryable(str(exc) or type(exc).__name__) from exc
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        os.chmod(tmp, 0o644)
        return tmp

    @contextmanager
    def _progress_bar(self, filename: str, total: int | None) -> Iterator[Callable[[int], None]]:
        if self._progress is None or total is None:
            yield lambda _n: None
            return
        with self._progress(filename, total) as advance:
            yield advance

    @staticmethod
    def _filename_for(ref: FileRef, url: str) -> str:
        if ref.filename is not None:
            if not _valid_filename(ref.filename):
                raise UsageError(f"file {ref.key!r}: bad filename {ref.filename!r}")
            return ref.filename
        name = urllib.parse.unquote(urllib.parse.urlsplit(url).path).rsplit("/", 1)[-1]
        for candidate in (name, ref.key):
            if _valid_filename(candidate):
                return candidate
        return "artifact"

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """Hold the cache-wide advisory lock called ``name`` for the block.

        Processes (and threads) that share this cache and ask for the same name take turns;
        the lock ends with the block, or with the process that held it. The zoo's exports
        use it so two runs sharing a cache export a model once, and the second one waits.
        """
        folder = self._root / ".locks"
        folder.mkdir(parents=True, exist_ok=True)
        with _held(folder / f"{name}.lock"):
            yield

    # -- cache entries -------------------------------------------------------------------------

    @contextmanager
    def _locked(self, entry: Path) -> Iterator[None]:
        entry.mkdir(parents=True, exist_ok=True)
        with _held(entry / _LOCK_NAME):
            # Whoever holds the lock is the only writer, so leftover temps are from a dead process.
            for stale in entry.glob(_TMP_PREFIX + "*"):
                stale.unlink(missing_ok=True)
            yield

    @staticmethod
    def _tmp_path(entry: Path) -> Path:
        fd, name = tempfile.mkstemp(dir=entry, prefix=_TMP_PREFIX)
        os.close(fd)
        return Path(name)

    @staticmethod
    def _matches(path: Path, expected: dict[str, str]) -> dict[str, str] | None:
        actual = _hash_file(path, tuple({"sha256", *expected}))
        return actual if all(actual[k] == v for k, v in expected.items()) else None

    def _reuse_sibling(self, entry: Path, final: Path, expected: dict[str, str]) -> str | None:
        # The same content cached under another filename saves a download.
        for sibling in sorted(entry.iterdir()):
            if sibling == final or not sibling.is_file() or not _valid_filename(sibling.name):
                continue
            actual = self._matches(sibling, expected)
            if actual is None:
                continue
            tmp = self._tmp_path(entry)
            try:
                tmp.unlink()
                try:
                    os.link(sibling, tmp)
                except OSError:
                    shutil.copyfile(sibling, tmp)
                    if not self._matches(tmp, expected):
                        continue
                os.replace(tmp, final)
            finally:
                tmp.unlink(missing_ok=True)
            return actual["sha256"]
        return None

    @staticmethod
    def _copy_hashing(src: BinaryIO, dst: BinaryIO) -> str:
        hasher = hashlib.sha256()
        while chunk := src.read(_CHUNK):
            hasher.update(chunk)
            dst.write(chunk)
        return hasher.hexdigest()

    @staticmethod
    def _raise_on_mismatch(
        ref: FileRef, expected: dict[str, str], actual: dict[str, str]
    ) -> None:
        for algorithm, want in expected.items():
            if actual[algorithm] != want:
                raise ArtifactHashMismatch(
                    f"file {ref.key!r} from {ref.location} does not match its declared "
                    f"{algorithm}: expected {want}, got {actual[algorithm]}"
                )


def _content_length(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        length = int(value)
    except ValueError:
        return None
    return length if length >= 0 else None
