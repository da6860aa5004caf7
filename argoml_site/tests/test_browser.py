"""Pages in a real browser: the admin and the API docs, served by the test server."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_admin_logs_in_and_sees_the_index(live_server, page, django_user_model):
    django_user_model.objects.create_superuser("admin", "admin@example.com", "a-long-password-1")
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "a-long-password-1")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    assert page.title().startswith("Site administration")
    assert page.is_visible("text=Namespace grants")


def test_a_wrong_password_is_refused_with_a_message(live_server, page, django_user_model):
    django_user_model.objects.create_superuser("admin", "admin@example.com", "a-long-password-1")
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "wrong")
    page.click("input[type=submit]")
    assert page.is_visible("text=Please enter the correct username and password")


def test_the_api_docs_render_offline(live_server, page, django_user_model):
    django_user_model.objects.create_superuser("admin", "admin@example.com", "a-long-password-1")
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "a-long-password-1")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title", timeout=15000)
    assert "Argo-ML API" in page.inner_text(".swagger-ui .info .title")
    assert page.is_visible("text=/api/namespaces/")
