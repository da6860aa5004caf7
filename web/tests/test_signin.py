"""Sign-in lockout (dashboard, admin, token endpoint) and API throttling, counted in a real Redis."""

from __future__ import annotations

import uuid

import pytest
import redis
from django.test import Client, RequestFactory
from rest_framework.test import APIClient

from web import signin

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-password-1"


@pytest.fixture(autouse=True)
def limits(settings):
    """Lockout on (3 per username, 5 per address), counted under a prefix no other test run shares."""
    settings.SIGNIN_LOCKOUT_FAILURES = 3
    settings.SIGNIN_LOCKOUT_ADDRESS_FAILURES = 5
    settings.SIGNIN_LOCKOUT_WINDOW_SECONDS = 60
    settings.SIGNIN_LOCKOUT_SECONDS = 120
    settings.SIGNIN_CLIENT_ADDRESS_HEADER = ""
    prefix = f"argoml:test-signin:{uuid.uuid4().hex}"
    original, signin.PREFIX = signin.PREFIX, prefix
    url = settings.REDIS_URL
    yield prefix
    signin.PREFIX = original
    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("lena", password=PASSWORD, is_staff=True)


def sign_in(client: Client, username: str, password: str, url: str = "/dashboard/login/", addr="10.0.0.1"):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=addr)


def test_three_failures_lock_the_username_even_for_the_right_password(client, user):
    for _ in range(3):
        assert "did not match" in sign_in(client, "lena", "wrong").content.decode()
    response = sign_in(client, "lena", PASSWORD)
    assert response.status_code == 200
    assert "Too many failed sign-ins for this account or address. Try again in 2 minutes." in (
        response.content.decode()
    )
    assert "_auth_user_id" not in client.session


def test_the_lock_is_per_username_case_folded(client, user, django_user_model):
    django_user_model.objects.create_user("other", password=PASSWORD)
    for _ in range(3):
        sign_in(client, "LENA", "wrong")
    assert "Too many failed" in sign_in(client, "lena", PASSWORD, addr="10.0.0.2").content.decode()
    assert sign_in(client, "other", PASSWORD, addr="10.0.0.2").status_code == 302


def test_a_good_password_before_the_limit_clears_the_usernames_count(client, user):
    for _ in range(2):
        sign_in(client, "lena", "wrong")
    assert sign_in(client, "lena", PASSWORD).status_code == 302
    client.logout()
    for _ in range(2):
        sign_in(client, "lena", "wrong")
    assert sign_in(client, "lena", PASSWORD).status_code == 302


def test_one_address_trying_many_usernames_is_locked(client, user):
    for number in range(5):
        sign_in(client, f"guess-{number}", "wrong", addr="10.0.0.9")
    assert "Too many failed" in sign_in(client, "lena", PASSWORD, addr="10.0.0.9").content.decode()
    assert sign_in(client, "lena", PASSWORD, addr="10.0.0.10").status_code == 302


def test_the_admin_sign_in_is_locked_too(client, user):
    for _ in range(3):
        sign_in(client, "lena", "wrong", url="/admin/login/")
    response = sign_in(client, "lena", PASSWORD, url="/admin/login/")
    assert response.status_code == 200
    assert "Too many failed sign-ins" in response.content.decode()


def test_the_lock_expires(client, user, limits, settings):
    for _ in range(3):
        sign_in(client, "lena", "wrong")
    store = redis.Redis.from_url(settings.REDIS_URL)
    store.delete(*store.scan_iter(f"{limits}:lock:*"))  # as if SIGNIN_LOCKOUT_SECONDS had passed
    assert sign_in(client, "lena", PASSWORD).status_code == 302


def test_zero_failures_turns_the_lockout_off(client, user, settings):
    settings.SIGNIN_LOCKOUT_FAILURES = 0
    settings.SIGNIN_LOCKOUT_ADDRESS_FAILURES = 0
    for _ in range(10):
        sign_in(client, "lena", "wrong")
    assert sign_in(client, "lena", PASSWORD).status_code == 302


def test_without_redis_sign_in_still_works(client, user, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    assert sign_in(client, "lena", PASSWORD).status_code == 302


@pytest.mark.parametrize(
    ("header", "meta", "address"),
    [
        ("", {"REMOTE_ADDR": "10.1.1.1", "HTTP_X_FORWARDED_FOR": "6.6.6.6"}, "10.1.1.1"),
        ("X-Forwarded-For", {"REMOTE_ADDR": "10.1.1.1", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 8.8.4.4"},
         "8.8.4.4"),
        ("X-Forwarded-For", {"REMOTE_ADDR": "10.1.1.1"}, "10.1.1.1"),
        ("X-Real-Ip", {"REMOTE_ADDR": "10.1.1.1", "HTTP_X_REAL_IP": "8.8.8.8"}, "8.8.8.8"),
    ],
)  # fmt: skip
def test_the_client_address_trusts_only_the_last_entry_of_the_configured_header(header, meta, address):
    request = RequestFactory().get("/", **meta)
    assert signin.client_address(request, header) == address


@pytest.mark.parametrize(
    ("seconds", "text"), [(1, "1 minute"), (60, "1 minute"), (61, "2 minutes"), (900, "15 minutes")]
)
def test_the_lock_message_rounds_up_to_minutes(seconds, text):
    assert signin.lock_message(seconds).endswith(f"Try again in {text}.")


# -- the API ---------------------------------------------------------------------------------------------


def test_the_token_endpoint_trades_a_password_for_the_users_token(user):
    response = APIClient().post("/api/token/", {"username": "lena", "password": PASSWORD}, format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    assert APIClient().get("/api/namespaces/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200


def test_the_token_endpoint_locks_after_failures_with_429_and_retry_after(user):
    api = APIClient()
    for _ in range(3):
        response = api.post("/api/token/", {"username": "lena", "password": "wrong"}, format="json")
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == "Token"
    response = api.post("/api/token/", {"username": "lena", "password": PASSWORD}, format="json")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 60
    assert "Too many failed sign-ins" in response.json()["detail"]


@pytest.fixture
def fresh_throttles():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def test_the_token_endpoint_has_its_own_strict_rate(user, settings, fresh_throttles):
    settings.SIGNIN_LOCKOUT_FAILURES = 0
    settings.SIGNIN_LOCKOUT_ADDRESS_FAILURES = 0
    settings.API_THROTTLE_TOKEN = "2/minute"
    api = APIClient()
    codes = [api.post("/api/token/", {"username": "lena", "password": "x"}).status_code for _ in range(3)]
    assert codes == [401, 401, 429]


def test_anonymous_and_user_rates_apply_to_the_api(user, settings, fresh_throttles):
    settings.SIGNIN_LOCKOUT_FAILURES = 0
    settings.SIGNIN_LOCKOUT_ADDRESS_FAILURES = 0
    settings.API_THROTTLE_ANON = "2/minute"
    settings.API_THROTTLE_USER = "3/minute"
    anonymous = APIClient()
    # Anonymous callers reach only the token endpoint; elsewhere they get 401 before any throttle.
    bad = {"username": "lena", "password": "x"}
    assert [anonymous.post("/api/token/", bad).status_code for _ in range(3)] == [401, 401, 429]
    signed_in = APIClient()
    signed_in.force_authenticate(user)
    assert [signed_in.get("/api/namespaces/").status_code for _ in range(4)] == [200, 200, 200, 429]


def test_the_token_endpoint_names_a_missing_field_with_400(user):
    response = APIClient().post("/api/token/", {"username": "lena"}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["password"]
