"""Tests for the artifact cache, against a real HTTP server on loopback."""

from __future__ import annotations

import hashlib
import io
import socket
import threading
from pathlib import Path

import pytest
from rich.console import Console

from conftest import FileServer

from benchlab.spec.artifacts import ArtifactCache, default_cache_dir, md5_of, sha256_of
from benchlab.errors import ArtifactHashMismatch, DownloadError, UsageError
from benchlab.report.terminal import download_bar
from benchlab.spec.types import FileRef

MODEL = b"pretend this is an onnx model\n" * 1000
OTHER = b"some entirely different bytes\n" * 100


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


@pytest.fixture
def cache(tmp_path: Path) -> ArtifactCache:
    return ArtifactCache(tmp_path / "cache")


def ref(location: str, base_dir: Path = Path("/nonexistent"), **hashes: str | None) -> FileRef:
    return FileRef("model", location, base_dir, **hashes)  # type: ignore[arg-type]


def cached_files(cache: ArtifactCache) -> list[Path]:
    """Every file in the cache except the per-entry lock files."""
    if not cache.root.exists():
        return []
    return sorted(p for p in cache.root.rglob("*") if p.is_file() and p.name != ".benchlab.lock")


# -- downloads ---------------------------------------------------------------------------------


def test_download_then_cache_hit_makes_no_request(server: FileServer, cache: ArtifactCache) -> None:
    server.files["/m/model.onnx"] = MODEL
    r = ref(server.url("/m/model.onnx"), sha256=sha(MODEL))

    first = cache.fetch_info(r)
    assert first.source == "download"
    assert first.verified and first.sha256 == sha(MODEL)
    assert first.path == cache.root / "sha256" / sha(MODEL) / "model.onnx"
    assert first.path.read_bytes() == MODEL

    second = cache.fetch_info(r)
    assert second.source == "cache"
    assert second.path == first.path
    assert server.requests["/m/model.onnx"] == 1
    assert cached_files(cache) == [first.path]


def test_md5_only_ref_is_cached_under_md5(server: FileServer, cache: ArtifactCache) -> None:
    server.files["/legacy.pt"] = MODEL
    info = cache.fetch_info(ref(server.url("/legacy.pt"), md5=md5(MODEL).upper()))
    assert info.path == cache.root / "md5" / md5(MODEL) / "legacy.pt"
    assert info.sha256 == sha(MODEL)
    assert cache.fetch(ref(server.url("/legacy.pt"), md5=md5(MODEL))) == info.path
    assert server.requests["/legacy.pt"] == 1


def test_explicit_filename_and_same_content_under_another_name(
    server: FileServer, cache: ArtifactCache
) -> None:
    server.files["/download?id=7"] = MODEL
    r = FileRef("model", server.url("/download?id=7"), Path("."), sha256=sha(MODEL),
                filename="net.onnx")
    path = cache.fetch(r)
    assert path.name == "net.onnx"
    renamed = FileRef("model", server.url("/download?id=7"), Path("."), sha256=sha(MODEL),
                      filename="copy.onnx")
    other = cache.fetch_info(renamed)
    assert other.source == "cache" and other.path.name == "copy.onnx"
    assert other.path.read_bytes() == MODEL
    assert server.requests["/download?id=7"] == 1


def test_corrupt_cached_file_is_downloaded_again(server: FileServer, cache: ArtifactCache) -> None:
    server.files["/model.onnx"] = MODEL
    r = ref(server.url("/model.onnx"), sha256=sha(MODEL))
    path = cache.fetch(r)
    path.write_bytes(b"edited by someone")

    info = cache.fetch_info(r)
    assert info.source == "download"
    assert info.path == path and path.read_bytes() == MODEL
    assert server.requests["/model.onnx"] == 2


def test_corrupt_cache_and_wrong_server_content_leaves_nothing(
    server: FileServer, cache: ArtifactCache
) -> None:
    server.files["/model.onnx"] = MODEL
    r = ref(server.url("/model.onnx"), sha256=sha(MODEL))
    cache.fetch(r).write_bytes(b"edited by someone")
    server.files["/model.onnx"] = OTHER

    with pytest.raises(ArtifactHashMismatch):
        cache.fetch(r)
    # The corrupt copy counts as the first bad copy: one re-download, then give up.
    assert server.requests["/model.onnx"] == 2
    assert cached_files(cache) == []


def test_wrong_hash_raises_after_one_retry_and_leaves_nothing(
    server: FileServer, cache: ArtifactCache
) -> None:
    server.files["/model.onnx"] = OTHER
    with pytest.raises(ArtifactHashMismatch) as excinfo:
        cache.fetch(ref(server.url("/model.onnx"), sha256=sha(MODEL)))
    message = str(excinfo.value)
    assert "'model'" in message and server.url("/model.onnx") in message
    assert sha(MODEL) in message and sha(OTHER) in message
    assert server.requests["/model.onnx"] == 2
    assert cached_files(cache) == []


def test_md5_checked_even_when_sha256_matches(server: FileServer, cache: ArtifactCache) -> None:
    server.files["/model.onnx"] = MODEL
    with pytest.raises(ArtifactHashMismatch, match="md5"):
        cache.fetch(ref(server.url("/model.onnx"), sha256=sha(MODEL), md5=md5(OTHER)))
    assert cached_files(cache) == []


def test_truncated_download_retries_once_then_fails(
    server: FileServer, cache: ArtifactCache
) -> None:
    with pytest.raises(DownloadError, match="100 of 1000"):
        cache.fetch(ref(server.url("/truncated/model.onnx"), sha256=sha(MODEL)))
    assert server.requests["/truncated/model.onnx"] == 2
    assert cached_files(cache) == []


def test_not_found_is_a_download_error_without_retry(
    server: FileServer, cache: ArtifactCache
) -> None:
    url = server.url("/missing.onnx")
    with pytest.raises(DownloadError, match="404") as excinfo:
        cache.fetch(ref(url, sha256=sha(MODEL)))
    assert url in str(excinfo.value)
    assert server.requests["/missing.onnx"] == 1
    assert cached_files(cache) == []


def test_connection_refused_is_a_download_error(cache: ArtifactCache) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/model.onnx"
    with pytest.raises(DownloadError) as excinfo:
        cache.fetch(ref(url, sha256=sha(MODEL)))
    assert url in str(excinfo.value)


def test_remote_without_hash_is_refused(server: FileServer, cache: ArtifactCache) -> None:
    server.files["/model.onnx"] = MODEL
    with pytest.raises(UsageError, match="no sha256 or md5"):
        cache.fetch(ref(server.url("/model.onnx")))
    assert server.requests["/model.onnx"] == 0


def test_malformed_hash_is_a_usage_error(cache: ArtifactCache) -> None:
    with pytest.raises(UsageError, match="not a valid sha256"):
        cache.fetch(ref("http://127.0.0.1:9/model.onnx", sha256="abc"))


def test_download_bar_renders_to_console(server: FileServer, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    server.files["/big.onnx"] = MODEL
    out = io.StringIO()
    # A terminal of the test's own: rich draws no live bar on a dumb one (TERM=dumb, as in many
    # CI jobs), and rich reads TERM from the environment, not from the console's arguments.
    # With a width but no height, a dumb terminal would also be 80 columns wide.
    monkeypatch.setenv("TERM", "xterm-256color")
    console = Console(file=out, force_terminal=True, force_interactive=True, width=100,
                      height=25, color_system="standard")
    cache = ArtifactCache(tmp_path / "cache", progress=download_bar(console))
    path = cache.fetch(ref(server.url("/big.onnx"), sha256=sha(MODEL)))
    assert path.read_bytes() == MODEL
    assert "big.onnx" in out.getvalue()


# -- local files -------------------------------------------------------------------------------


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "models" / "net.onnx"
    path.parent.mkdir()
    path.write_bytes(MODEL)
    return path


def test_file_url_is_verified_in_place(model_file: Path, cache: ArtifactCache) -> None:
    info = cache.fetch_info(ref(model_file.as_uri(), sha256=sha(MODEL)))
    assert info.path == model_file
    assert info.source == "local" and info.verified
    assert cached_files(cache) == []


def test_absolute_and_relative_paths(model_file: Path, cache: ArtifactCache) -> None:
    assert cache.fetch(ref(str(model_file), md5=md5(MODEL))) == model_file
    relative = ref("models/net.onnx", base_dir=model_file.parent.parent, sha256=sha(MODEL))
    assert cache.fetch(relative) == model_file.parent.parent / "models" / "net.onnx"


def test_root_model_dir_locations(model_file: Path, tmp_path: Path) -> None:
    r = ref("//models/net.onnx", sha256=sha(MODEL))
    with_root = ArtifactCache(tmp_path / "cache", root_model_dir=tmp_path)
    assert with_root.fetch(r) == tmp_path / "models" / "net.onnx"
    without_root = ArtifactCache(tmp_path / "cache")
    with pytest.raises(UsageError, match="root model directory"):
        without_root.fetch(r)


def test_local_mismatch_raises_immediately(model_file: Path, cache: ArtifactCache) -> None:
    with pytest.raises(ArtifactHashMismatch, match=sha(OTHER)):
        cache.fetch(ref(str(model_file), sha256=sha(OTHER)))
    assert model_file.read_bytes() == MODEL


def test_local_file_is_rehashed_on_every_fetch(model_file: Path, cache: ArtifactCache) -> None:
    r = ref(str(model_file), sha256=sha(MODEL))
    cache.fetch(r)
    model_file.write_bytes(OTHER)
    with pytest.raises(ArtifactHashMismatch):
        cache.fetch(r)


def test_local_without_hash_is_returned_unverified(model_file: Path, cache: ArtifactCache) -> None:
    info = cache.fetch_info(ref(str(model_file)))
    assert info.path == model_file
    assert not info.verified
    assert info.sha256 == sha(MODEL)


def test_missing_local_file_is_a_usage_error(tmp_path: Path, cache: ArtifactCache) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        cache.fetch(ref("nope.onnx", base_dir=tmp_path, sha256=sha(MODEL)))


# -- put and helpers ---------------------------------------------------------------------------


def test_put_is_content_addressed_and_idempotent(model_file: Path, cache: ArtifactCache) -> None:
    path, digest = cache.put(model_file)
    assert digest == sha(MODEL)
    assert path == cache.root / "sha256" / digest / "net.onnx"
    assert path.read_bytes() == MODEL
    before = path.stat()

    again, digest_again = cache.put(model_file)
    assert (again, digest_again) == (path, digest)
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)

    # What was put is then fetchable by its hash, from any location naming the same file name.
    fetched = cache.fetch_info(ref("http://127.0.0.1:9/net.onnx", sha256=digest))
    assert fetched.path == path and fetched.source == "cache"


def test_put_with_filename_and_after_corruption(model_file: Path, cache: ArtifactCache) -> None:
    path, digest = cache.put(model_file, filename="exported.onnx")
    assert path.name == "exported.onnx"
    path.write_bytes(b"corrupted")
    repaired, _ = cache.put(model_file, filename="exported.onnx")
    assert repaired == path and sha256_of(repaired) == digest


def test_hash_helpers(model_file: Path) -> None:
    assert sha256_of(model_file) == sha(MODEL)
    assert md5_of(model_file) == md5(MODEL)


def test_default_cache_dir_reads_xdg(tmp_path: Path) -> None:
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "benchlab/artifacts"
    home_based = default_cache_dir({"XDG_CACHE_HOME": "relative/ignored"})
    assert home_based == Path.home() / ".cache" / "benchlab" / "artifacts"


def test_concurrent_fetches_download_once(server: FileServer, cache: ArtifactCache) -> None:
    server.files["/shared.onnx"] = MODEL
    r = ref(server.url("/shared.onnx"), sha256=sha(MODEL))
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(cache.fetch(r))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6 and len(set(results)) == 1
    assert results[0].read_bytes() == MODEL
    # The per-entry lock makes the late arrivals find a cache hit instead of downloading.
    assert server.requests["/shared.onnx"] == 1
