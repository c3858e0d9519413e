"""The lab's pages in a real browser: no console errors, charts drawn, filters work.

A uvicorn server on loopback serves a seeded lab; Debian's Chromium drives it through
Playwright. Set ``BENCHLAB_SCREENSHOTS=docs/lab`` to (re)write the documentation's
screenshots of the overview, trends and devices pages.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .test_pages import build_app, seeded

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.browser]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server(lab_url: str) -> Iterator[tuple[str, dict]]:
    """The seeded lab served by uvicorn in a thread; yields its base URL and the seed's ids."""
    import uvicorn

    port = _free_port()
    with seeded(lab_url) as info:
        srv = uvicorn.Server(uvicorn.Config(build_app(lab_url), host="127.0.0.1", port=port,
                                            log_level="warning", log_config=None))
        thread = threading.Thread(target=srv.run, daemon=True)
        thread.start()
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or not thread.is_alive():
                pytest.fail("the lab server did not start")
            time.sleep(0.1)
        try:
            yield base, info
        finally:
            srv.should_exit = True
            thread.join(10)


@pytest.fixture
def browser() -> Iterator[object]:
    playwright = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def _chart_ok(page: object) -> None:
    """At least one SVG chart with a real size and marks inside it."""
    charts = page.locator("svg.plot")
    assert charts.count() >= 1
    box = charts.first.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 50
    assert charts.first.locator("path, rect, circle").count() > 0


def test_pages_in_chromium(server: tuple[str, dict], browser: object) -> None:
    base, info = server
    shots = os.environ.get("BENCHLAB_SCREENSHOTS")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    failed: list[str] = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)

    def visit(path: str, shot: str | None = None, chart: bool = False) -> None:
        response = page.goto(base + path)
        assert response is not None and response.status == 200, path
        if chart:
            _chart_ok(page)
        if shot and shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(shots) / shot), full_page=True)

    visit("/", "overview.png", chart=True)
    rows_before = page.locator("#matrix tr.cell-row").count()
    page.select_option("#f-model", "mobilenet_v3")
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state()
    assert "model=mobilenet_v3" in page.url
    rows_after = page.locator("#matrix tr.cell-row")
    assert 0 < rows_after.count() < rows_before
    assert {rows_after.nth(i).get_attribute("data-model")
            for i in range(rows_after.count())} == {"mobilenet_v3"}

    visit("/trends?model=resnet18&backend=onnxruntime", "trends.png", chart=True)
    assert page.locator("svg.plot path.band").count() == 2
    assert page.locator("svg.plot line.mark-change").count() >= 1
    visit("/devices", "devices.png")
    assert page.locator("#devices tbody tr").count() == 5
    page.click("a.tab[data-tab=quarantined]")
    page.wait_for_load_state()
    assert "tab=quarantined" in page.url and page.locator("#devices tbody tr").count() == 1
    visit("/devices/pixel-sick")
    visit("/queue")
    assert page.locator("#queues tr.stuck").count() == 1
    runs = info["runs"]
    visit(f"/compare?a={runs[1]}&b={runs[3]}", chart=True)
    visit(f"/runs/{runs[-1]}", chart=True)
    visit(f"/jobs/{info['report_job']}")
    assert "regression" in page.locator("#report").inner_text()
    assert errors == [] and failed == []


def test_a_person_logs_in_and_acts_from_the_pages(server: tuple[str, dict], browser: object,
                                                  lab_url: str) -> None:
    from benchlab.lab.devices import get_device
    from benchlab.lab.jobs import get_job
    from benchlab.lab.queue import store_url
    from benchlab.store import open_store

    base, info = server
    shots = os.environ.get("BENCHLAB_SCREENSHOTS")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    job = info["jobs"][1]  # waiting for pixel-idle

    page.goto(f"{base}/jobs/{job}")
    assert page.locator("#cancel").count() == 0  # anonymous: no admin buttons
    page.click("#login")
    page.fill("#token", info["admin"])
    page.click("form.login button[type=submit]")
    page.wait_for_load_state()
    assert page.url == f"{base}/jobs/{job}"  # back where the person was
    assert "signed in as admin" in page.locator("nav").inner_text()
    (cookie,) = [c for c in context.cookies() if c["name"] == "benchlab_session"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert cookie["value"] != info["admin"]
    assert page.evaluate("document.cookie") == ""  # script cannot read the session

    page.click("#cancel")
    page.wait_for_load_state()
    assert page.locator("#job-status").inner_text() == "cancelled"
    with open_store(store_url(lab_url)) as store:
        assert get_job(store, job).status == "cancelled"

    page.goto(f"{base}/devices/pixel-idle")
    page.fill("#reason", "fan noise, checking it")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / "device-admin.png"), full_page=True)
    page.click("#quarantine")
    page.wait_for_load_state()
    assert "fan noise, checking it" in page.locator("#quarantined").inner_text()
    with open_store(store_url(lab_url)) as store:
        device = get_device(store, "pixel-idle")
        assert device.quarantined and device.quarantined_by == "admin"
    page.click("#release")
    page.wait_for_load_state()
    assert page.locator("#quarantined").count() == 0 and page.locator("#quarantine").count()
    with open_store(store_url(lab_url)) as store:
        assert not get_device(store, "pixel-idle").quarantined

    page.click("#logout")
    page.wait_for_load_state()
    assert page.locator("#login").count() == 1
    page.goto(f"{base}/devices/pixel-idle")
    assert page.locator("#quarantine").count() == 0
    assert errors == []
    context.close()
