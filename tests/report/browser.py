"""Headless Chromium for the report tests: a screenshot of a page with the network cut off,
and how many of its pixels have a given colour."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["colour_pixels", "screenshot"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("headless Chromium is needed for the report tests: apt-get install chromium "
                "(README's test command installs it)")


def screenshot(page: Path, shot: Path, window: tuple[int, int]) -> Path:
    """Render ``page`` offline (every host unresolvable, a dead proxy) into the PNG ``shot``."""
    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
         f"--window-size={window[0]},{window[1]}", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=120, cwd=shot.parent,
    )
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    return shot


def colour_pixels(png: Path, colour: str, tolerance: int = 12) -> int:
    """Pixels of ``png`` within ``tolerance`` of ``colour`` (``#rrggbb``) on every channel."""
    from PIL import Image

    want = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    image = Image.open(png).convert("RGB")
    return sum(count for count, rgb in image.getcolors(maxcolors=1 << 24)
               if all(abs(a - b) <= tolerance for a, b in zip(rgb, want)))
