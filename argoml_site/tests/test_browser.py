"""Pages in a real browser: the admin and the API docs, served by the test server."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-password-1"


@pytest.fixture
def admin_user(django_user_model):
    return django_user_model.objects.create_superuser("admin", "admin@example.com", PASSWORD)


def log_in(page, base_url: str, password: str = PASSWORD) -> None:
    page.goto(f"{base_url}/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", password)
    page.click("input[type=submit]")


def test_an_admin_logs_in_and_sees_the_index(live_server, page, admin_user):
    log_in(page, live_server.url)
    page.wait_for_selector("#site-name")
    assert page.title().startswith("Site administration")
    assert page.is_visible("text=Namespace grants")


def test_a_wrong_password_is_refused_with_a_message(live_server, page, admin_user):
    log_in(page, live_server.url, password="wrong")
    assert page.is_visible("text=Please enter the correct username and password")


def test_the_api_docs_render_offline(live_server, page, admin_user):
    log_in(page, live_server.url)
    page.wait_for_selector("#site-name")
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title", timeout=15000)
    assert "Argo-ML API" in page.inner_text(".swagger-ui .info .title")
    assert page.is_visible("text=/api/namespaces/")
