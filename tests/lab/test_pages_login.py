"""Signing in to the lab's pages, and the admin forms they offer (TestClient, seeded lab).

Split from ``test_pages.py`` (same seed): these are about who may do what from a page, its
cookie and its CSRF token, not about what the pages show.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from benchlab.lab.devices import get_device
from benchlab.lab.jobs import get_job
from benchlab.lab.server.app import create_app
from benchlab.lab.sessions import COOKIE_NAME
from benchlab.lab.tokens import create_token, list_tokens, revoke_token

from .test_pages import build_app, seeded

pytestmark = pytest.mark.postgres


@pytest.fixture
def lab(lab_url: str) -> Iterator[tuple[str, dict]]:
    """The seeded lab's URL and its seed (an admin token, jobs, devices)."""
    with seeded(lab_url) as info:
        yield lab_url, info


def _client(url: str, base_url: str = "http://testserver") -> TestClient:
    return TestClient(build_app(url), base_url=base_url)


def _login(c: TestClient, token: str) -> str:
    """Sign ``c`` in; return the CSRF token its pages carry."""
    answer = c.post("/login", data={"token": token, "next": "/"}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return _csrf(c.get("/").text)


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page carries no CSRF token"
    return found.group(1)


def test_login_sets_a_strict_httponly_cookie_that_is_not_the_token(
        lab: tuple[str, dict]) -> None:
    url, info = lab
    token = info["admin"]
    with _client(url) as c:
        assert 'id="login"' in c.get("/").text and "signed in as" not in c.get("/").text
        form = c.get("/login", params={"next": "/queue"})
        assert form.status_code == 200 and 'type="password" name="token"' in form.text
        answer = c.post("/login", data={"token": token, "next": "/queue"},
                        follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"] == "/queue"
        header = answer.headers["set-cookie"]
        attributes = {part.strip().split("=")[0].lower() for part in header.split(";")}
        assert {"httponly", "path", "max-age"} <= attributes
        assert "samesite=strict" in header.lower() and "path=/;" in header.lower() + ";"
        assert "secure" not in attributes  # plain http here; see the https case below
        value = c.cookies[COOKIE_NAME]
        assert value != token and token not in header and token[3:] not in value
        page = c.get("/queue").text
        assert "signed in as <b>admin</b>" in page and 'id="logout"' in page
        assert token not in page
        # The API does not take the cookie: a write there still needs the header.
        job = info["jobs"][1]
        assert c.post(f"/api/v1/jobs/{job}/cancel").status_code == 401
        assert get_job(c.app.state.lab.store, job).status == "waiting"  # type: ignore[attr-defined]

        # Logging out ends the session on the server, not only in this browser.
        copied = c.cookies[COOKIE_NAME]
        out = c.post("/logout", data={"csrf": _csrf(page)}, follow_redirects=False)
        assert out.status_code == 303 and COOKIE_NAME in out.headers["set-cookie"]
        assert "signed in as" not in c.get("/").text
    with _client(url) as replay:
        replay.cookies.set(COOKIE_NAME, copied)
        assert "signed in as" not in replay.get("/").text

    with _client(url, base_url="https://testserver") as tls:
        answer = tls.post("/login", data={"token": token}, follow_redirects=False)
        assert "secure" in answer.headers["set-cookie"].lower()


def test_login_refuses_bad_tokens_other_sites_and_foreign_redirects(
        lab: tuple[str, dict]) -> None:
    url, info = lab
    with _client(url) as c:
        bad = c.post("/login", data={"token": "bl_not-a-token"}, follow_redirects=False)
        assert bad.status_code == 401 and "unknown or revoked" in bad.text
        assert "set-cookie" not in bad.headers
        forged = c.post("/login", data={"token": info["admin"]}, follow_redirects=False,
                        headers={"Origin": "https://evil.example"})
        assert forged.status_code == 403 and "set-cookie" not in forged.headers
        away = c.post("/login", data={"token": info["admin"], "next": "//evil.example/"},
                      follow_redirects=False)
        assert away.headers["location"] == "/"
        # Revoking the token ends its sessions at once.
        assert "signed in as" in c.get("/").text
        store = c.app.state.lab.store  # type: ignore[attr-defined]
        admin_id = next(t.id for t in list_tokens(store) if t.name == "admin")
        revoke_token(store, admin_id)
        assert "signed in as" not in c.get("/").text


def test_forged_or_unscoped_forms_are_refused_and_change_nothing(
        lab: tuple[str, dict]) -> None:
    url, info = lab
    job = info["jobs"][1]  # waiting
    with _client(url) as alice, _client(url) as bob, _client(url) as anon, \
            _client(url) as reader:
        store = alice.app.state.lab.store  # type: ignore[attr-defined]
        read_token, _ = create_token(store, "viewer", "read")
        alice_csrf = _login(alice, info["admin"])
        bob_csrf = _login(bob, info["admin"])
        reader_csrf = _login(reader, read_token)
        assert alice_csrf != bob_csrf

        attempts = [
            (alice, f"/jobs/{job}/cancel", {}),  # no CSRF token
            (alice, f"/jobs/{job}/cancel", {"csrf": bob_csrf}),  # another session's
            (alice, f"/jobs/{job}/cancel", {"csrf": alice_csrf[:-2] + "xx"}),
            (anon, f"/jobs/{job}/cancel", {"csrf": alice_csrf}),  # no session
            (reader, f"/jobs/{job}/cancel", {"csrf": reader_csrf}),  # session lacks admin
            (alice, "/devices/pixel-idle/quarantine", {"reason": "forged"}),
            (bob, "/devices/pixel-idle/quarantine", {"csrf": alice_csrf, "reason": "x"}),
            (reader, "/devices/pixel-idle/quarantine", {"csrf": reader_csrf, "reason": "x"}),
            (anon, "/devices/pixel-quar/release", {"csrf": alice_csrf}),
            (reader, "/devices/pixel-quar/release", {"csrf": reader_csrf}),
        ]
        for client, path, form in attempts:
            answer = client.post(path, data=form, follow_redirects=False)
            assert answer.status_code == 403, (path, form, answer.text)
            assert "text/html" in answer.headers["content-type"]
        assert get_job(store, job).status == "waiting"
        assert not get_device(store, "pixel-idle").quarantined
        assert get_device(store, "pixel-quar").quarantined

        # A read-only session sees no admin buttons; an admin one does.
        assert 'id="cancel"' not in reader.get(f"/jobs/{job}").text
        assert 'id="quarantine"' not in reader.get("/devices/pixel-idle").text
        assert 'id="cancel"' in alice.get(f"/jobs/{job}").text

        done = alice.post(f"/jobs/{job}/cancel", data={"csrf": alice_csrf},
                          follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == f"/jobs/{job}"
        assert get_job(store, job).status == "cancelled"
        page = alice.get(f"/jobs/{job}").text
        assert 'id="job-status">cancelled<' in page and "cancelled by admin" in page
        assert 'id="cancel"' not in page  # no longer waiting
        again = alice.post(f"/jobs/{job}/cancel", data={"csrf": alice_csrf})
        assert again.status_code == 409
        blank = alice.post("/devices/pixel-idle/quarantine",
                           data={"csrf": alice_csrf, "reason": "  "})
        assert blank.status_code == 400 and not get_device(store, "pixel-idle").quarantined
        missing = alice.post("/devices/nope/release", data={"csrf": alice_csrf})
        assert missing.status_code == 404


def test_a_closed_lab_sends_visitors_to_the_login_page(lab_url: str) -> None:
    with TestClient(create_app(lab_url, anonymous_read=False)) as c:
        first = c.get("/devices", follow_redirects=False)
        assert first.status_code == 303
        assert first.headers["location"] == "/login?next=%2Fdevices"
        assert c.get("/login").status_code == 200
        assert c.get("/api/v1/devices").status_code == 401
        store = c.app.state.lab.store  # type: ignore[attr-defined]
        reader, _ = create_token(store, "viewer", "read")
        c.post("/login", data={"token": reader, "next": "/devices"})
        assert c.get("/devices").status_code == 200
        # the cookie opens the pages, never the API
        assert c.get("/api/v1/devices").status_code == 401
