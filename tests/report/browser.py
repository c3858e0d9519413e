"""Headless Chromium for the report tests, the network cut off: a screenshot of a page and how
many of its pixels have a given colour, or what a script measures in the laid-out page."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["colour_pixels", "measure", "screenshot"]

# Every host unresolvable and a dead proxy: a page that needs the network shows it.
_OFFLINE = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9")


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
        [_chromium(), *_OFFLINE, f"--window-size={window[0]},{window[1]}",
         f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=120, cwd=shot.parent,
    )
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    return shot


def measure(page: Path, expression: str, window: tuple[int, int]) -> object:
    """The value of the JavaScript ``expression`` (JSON) in ``page`` laid out offline in a
    window of that size. The page itself runs no script: the expression runs in a copy of it,
    at the end of its body, and leaves its value in the DOM Chromium prints."""
    probe = page.with_name(f"{page.stem}.measured.html")
    script = ("<script>{const out = document.createElement('pre'); out.id = 'measured'; "
              f"out.textContent = JSON.stringify({expression}); "
              "document.body.appendChild(out);}</script>")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"),
                     encoding="utf-8")
    proc = subprocess.run(
        [_chromium(), *_OFFLINE, f"--window-size={window[0]},{window[1]}", "--dump-dom",
         probe.as_uri()],
        capture_output=True, text=True, timeout=120, cwd=page.parent,
    )
    found = re.search(r'<pre id="measured">(.*?)</pre>', proc.stdout, re.S)
    assert proc.returncode == 0 and found, proc.stderr[-2000:]
    return json.loads(html.unescape(found[1]))


def colour_pixels(png: Path, colour: str, tolerance: int = 12) -> int:
    """Pixels of ``png`` within ``tolerance`` of ``colour`` (``#rrggbb``) on every channel."""
    from PIL import Image

    want = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    image = Image.open(png).convert("RGB")
    return sum(count for count, rgb in image.getcolors(maxcolors=1 << 24)
               if all(abs(a - b) <= tolerance for a, b in zip(rgb, want)))
