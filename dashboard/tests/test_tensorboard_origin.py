"""The TensorBoard origin (argoml_site/tensorboardorigin.py, dashboard/tensorboardpass.py): it serves the
proxy only and reads only its own tickets and passes; the dashboard's origin serves no TensorBoard. No
cluster here: every refusal comes before the proxy would call one (test_tensorboard_proxy.py goes through)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client

from access.models import NamespaceGrant
from argoml_site.tensorboardorigin import tensorboard_host
from dashboard import tensorboardpass

from . import factories
from .conftest import client_for

pytestmark = pytest.mark.django_db

NAMESPACE, NAME = "team-a", "tb1"
BASE = f"/tensorboards/{NAMESPACE}/{NAME}"
TB_HOST = "tb.testserver"


@pytest.fixture(autouse=True)
def tensorboard_origin(settings) -> None:
    settings.TENSORBOARD_BASE_URL = f"http://{TB_HOST}"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, TB_HOST]


@pytest.fixture
def instance() -> Any:
    return factories.tensorboard(NAME, NAMESPACE)


def ticket_for(user: Any, namespace: str = NAMESPACE, name: str = NAME, **kwargs: Any) -> str:
    return tensorboardpass.issue_ticket(tensorboardpass.bearer_of(user), namespace, name, **kwargs)


def redeem(ticket: str, path: str = f"{BASE}/") -> Any:
    return Client(HTTP_HOST=TB_HOST).get(path, {tensorboardpass.TICKET_PARAMETER: ticket})


# -- tickets ---------------------------------------------------------------------------------------------
def test_a_ticket_is_traded_once_for_a_pass_and_the_query_kept(instance, viewer):
    ticket = ticket_for(viewer)
    traded = Client(HTTP_HOST=TB_HOST).get(f"{BASE}/", {"ticket": ticket, "run": "a b"})
    assert traded.status_code == 302
    assert traded["Location"] == f"{BASE}/?run=a+b"
    assert traded["Cache-Control"] == "no-store"
    assert traded.cookies[tensorboardpass.COOKIE_NAME]["max-age"] == 8 * 3600
    assert redeem(ticket).status_code == 403  # used already


def test_a_forged_ticket_is_refused(instance, viewer):
    ticket = ticket_for(viewer)
    payload, _, signature = ticket.rpartition(":")
    for forged in (f"{payload}:{'A' * len(signature)}", "not-a-ticket", "x" * 5000):
        response = redeem(forged)
        assert response.status_code == 403
        assert "not one the dashboard issued" in response.content.decode()
        assert tensorboardpass.COOKIE_NAME not in response.cookies


def test_a_pass_is_not_a_ticket_nor_a_ticket_a_pass(instance, viewer):
    """Each is signed with its own salt: a pass replayed as a ticket, or the other way round, is refused."""
    a_pass = tensorboardpass.issue_pass(tensorboardpass.bearer_of(viewer), NAMESPACE, NAME)
    assert redeem(a_pass).status_code == 403
    browser = Client(HTTP_HOST=TB_HOST)
    browser.cookies[tensorboardpass.COOKIE_NAME] = ticket_for(viewer)
    assert browser.get(f"{BASE}/").status_code == 403


def test_an_expired_ticket_is_refused(instance, viewer):
    response = redeem(ticket_for(viewer, now=time.time() - tensorboardpass.TICKET_SECONDS - 5))
    assert response.status_code == 403
    assert "expired" in response.content.decode()


def test_a_ticket_for_another_tensorboard_is_refused(instance, viewer):
    factories.tensorboard("tb2", NAMESPACE)
    response = redeem(ticket_for(viewer, name="tb2"))
    assert response.status_code == 403
    assert "another TensorBoard" in response.content.decode()
    assert redeem(ticket_for(viewer, namespace="team-b"), f"{BASE}/").status_code == 403


def test_a_ticket_or_pass_of_a_user_who_changed_password_or_left_is_refused(instance, viewer):
    ticket = ticket_for(viewer)
    browser = Client(HTTP_HOST=TB_HOST)
    browser.cookies[tensorboardpass.COOKIE_NAME] = tensorboardpass.issue_pass(
        tensorboardpass.bearer_of(viewer), NAMESPACE, NAME
    )
    viewer.set_password("another-password-42")
    viewer.save()
    assert redeem(ticket).status_code == 403
    assert browser.get(f"{BASE}/").status_code == 403
    viewer.is_active = False
    viewer.save()
    assert redeem(ticket_for(viewer)).status_code == 403


# -- passes ----------------------------------------------------------------------------------------------
def test_a_revoked_grant_ends_a_pass_at_once(instance, viewer):
    browser = Client(HTTP_HOST=TB_HOST)
    browser.cookies[tensorboardpass.COOKIE_NAME] = tensorboardpass.issue_pass(
        tensorboardpass.bearer_of(viewer), NAMESPACE, NAME
    )
    NamespaceGrant.objects.filter(user=viewer).delete()
    response = browser.get(f"{BASE}/data/runs")
    assert response.status_code == 404


def test_an_expired_pass_or_one_for_another_tensorboard_is_refused(instance, viewer, settings):
    browser = Client(HTTP_HOST=TB_HOST)
    bearer = tensorboardpass.bearer_of(viewer)
    old = time.time() - settings.TENSORBOARD_PASS_SECONDS - 5
    browser.cookies[tensorboardpass.COOKIE_NAME] = tensorboardpass.issue_pass(
        bearer, NAMESPACE, NAME, now=old
    )
    assert "expired" in browser.get(f"{BASE}/").content.decode()
    browser.cookies[tensorboardpass.COOKIE_NAME] = tensorboardpass.issue_pass(bearer, NAMESPACE, "tb2")
    assert "another TensorBoard" in browser.get(f"{BASE}/").content.decode()


def test_the_dashboards_session_opens_no_tensorboard(instance, viewer):
    """On one host (the dev stack's two ports) the browser sends the dashboard's session cookie to the
    TensorBoard origin too: it is never read there."""
    signed_in = client_for(viewer)
    response = signed_in.get(f"{BASE}/", HTTP_HOST=TB_HOST)
    assert response.status_code == 403
    assert "no pass" in response.content.decode()
    assert "Set-Cookie" not in response


# -- two origins ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path", ["/", "/dashboard/", "/dashboard/tensorboards/", "/api/", "/api/tensorboards/", "/admin/",
             "/api/docs/", "/metrics", "/dashboard/login/", "/static/dashboard/app.css"]
)  # fmt: skip
def test_the_tensorboard_origin_serves_no_dashboard_api_or_admin(viewer, path):
    """Even to a signed-in browser: a plain 404 (the API's JSON one under /api/) naming nothing of the
    dashboard's."""
    response = client_for(viewer).get(path, HTTP_HOST=TB_HOST)
    assert response.status_code == 404
    assert "html" not in response["Content-Type"]
    assert viewer.username not in response.content.decode()
    assert "csrf" not in response.content.decode().lower()


def test_the_dashboards_origin_serves_no_tensorboard(instance, viewer):
    response = client_for(viewer).get(f"{BASE}/")
    assert response.status_code == 404
    assert redeem(ticket_for(viewer)).status_code == 302  # the same request on the TensorBoard origin


def test_without_a_base_url_no_proxy_is_served_anywhere(instance, viewer, settings):
    settings.TENSORBOARD_BASE_URL = ""
    assert Client().get(f"{BASE}/", {"ticket": ticket_for(viewer)}).status_code == 404
    assert client_for(viewer).get("/dashboard/").status_code == 200


@pytest.mark.parametrize(
    ("base_url", "host"),
    [
        ("http://127.0.0.1:8001", "127.0.0.1:8001"),
        ("https://TB.example.com", "tb.example.com"),
        ("https://tb.example.com:443/base", "tb.example.com"),
        ("http://tb.example.com:80", "tb.example.com"),
        ("https://tb.example.com:8443", "tb.example.com:8443"),
        ("http://[::1]:8001", "[::1]:8001"),
        ("", ""),
        ("/relative", ""),
        ("ftp://tb.example.com", ""),
    ],
)
def test_the_tensorboard_host_is_the_base_urls_as_a_browser_sends_it(base_url, host):
    assert tensorboard_host(base_url) == host


HOSTILE = ["", "\x00", "é" * 100, "a:b:c", "x" * 300_000, ".eJw" + "A" * 2000 + ":x:y", "%00%ff"]


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_ticket_or_pass_is_refused(instance, value):
    """The TensorBoard origin's one input of its own (doors.TENSORBOARD_ORIGIN): bounded, then verified."""
    assert redeem(value).status_code == 403
    browser = Client(HTTP_HOST=TB_HOST)
    browser.cookies[tensorboardpass.COOKIE_NAME] = value
    assert browser.get(f"{BASE}/data/runs").status_code == 403
