"""Every page: signed-in users only, scoped to their namespaces, with clear empty states."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from dashboard.tests import factories

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["overview", "jobs", "sweeps", "tensorboards", "gc", "submit"])
def test_a_visitor_who_is_not_signed_in_is_sent_to_the_sign_in_page(name):
    response = Client().get(reverse(f"dashboard:{name}"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("dashboard:login") + "?next=")


def test_the_bare_address_leads_an_anonymous_visitor_to_sign_in_then_to_the_dashboard():
    client = Client()
    response = client.get("/", follow=True)
    assert response.redirect_chain == [(reverse("dashboard:login") + "?next=/", 302)]
    assert response.status_code == 200
    django_user_model = get_user_model()
    django_user_model.objects.create_user("newcomer", password="a-long-password-1")
    signed_in = client.post(
        reverse("dashboard:login") + "?next=/",
        {"username": "newcomer", "password": "a-long-password-1", "next": "/"},
        follow=True,
    )
    assert signed_in.redirect_chain[-1] == (reverse("dashboard:overview"), 302)


def test_the_dashboard_links_to_the_api_docs_and_to_the_admin_for_staff_only(as_editor, django_user_model):
    page = as_editor.get(reverse("dashboard:overview")).content.decode()
    assert f'href="{reverse("swagger-ui")}"' in page
    assert f'href="{reverse("admin:index")}"' not in page
    staff = django_user_model.objects.create_user("sam", password="a-long-password-1", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert f'href="{reverse("admin:index")}"' in client.get(reverse("dashboard:overview")).content.decode()


def test_the_admin_and_the_api_docs_lead_back_to_the_dashboard(django_user_model):
    admin = django_user_model.objects.create_superuser("root", password="a-long-password-1")
    client = Client()
    client.force_login(admin)
    assert f'href="{reverse("dashboard:overview")}">View site' in client.get("/admin/").content.decode()
    schema = client.get(reverse("schema"), HTTP_ACCEPT="application/json").json()
    assert "[Back to the dashboard](/dashboard/)" in schema["info"]["description"]


def test_a_user_signs_in_with_a_password_and_lands_on_the_overview(editor):
    client = Client()
    response = client.post(reverse("dashboard:login"), {"username": "erin", "password": "a-long-password-1"})
    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard:overview")
    assert client.get(reverse("dashboard:overview")).status_code == 200


def test_a_wrong_password_is_refused_with_a_message(editor):
    response = Client().post(reverse("dashboard:login"), {"username": "erin", "password": "nope"})
    assert response.status_code == 200
    assert b"did not match" in response.content


@pytest.mark.parametrize("name", ["overview", "jobs", "sweeps", "tensorboards", "gc", "submit"])
def test_every_page_renders_for_a_user_with_nothing_yet(as_editor, name):
    response = as_editor.get(reverse(f"dashboard:{name}"))
    assert response.status_code == 200
    assert b'<main id="main"' in response.content


def test_empty_lists_say_so_and_point_to_the_next_step(as_editor):
    assert b"No jobs match." in as_editor.get(reverse("dashboard:jobs")).content
    assert b"No sweeps match." in as_editor.get(reverse("dashboard:sweeps")).content
    assert b"No TensorBoards are running" in as_editor.get(reverse("dashboard:tensorboards")).content
    assert b"No collection has run yet." in as_editor.get(reverse("dashboard:gc")).content


def test_the_overview_counts_jobs_and_sweeps_by_phase_in_the_users_namespaces_only(as_viewer):
    factories.job("a1", phase="Running")
    factories.job("a2", phase="Failed", state_reason="BackoffLimitExceeded")
    factories.job("zq-team-b-job", "team-b", phase="Failed", state_reason="SecretTeamBFailure")
    factories.sweep("s1", phase="Succeeded")
    factories.tensorboard("tb-a")
    factories.gc_run()
    page = as_viewer.get(reverse("dashboard:overview")).content.decode()
    assert "BackoffLimitExceeded" in page
    assert "SecretTeamBFailure" not in page
    assert "zq-team-b-job" not in page  # a name no random token of the page (CSRF) could hold
    assert "tb-a" in page
    assert "Run #" in page


def test_the_vendored_libraries_are_served_from_their_packages_with_long_caching(as_editor):
    for name in ("htmx.min.js", "plotly.min.js"):
        response = as_editor.get(reverse("dashboard:vendored", args=[name]))
        assert response.status_code == 200
        assert "immutable" in response["Cache-Control"]
        assert b"".join(response.streaming_content)[:200]
    assert as_editor.get(reverse("dashboard:vendored", args=["secrets.py"])).status_code == 404


def test_pages_load_scripts_only_from_this_server(as_editor):
    page = as_editor.get(reverse("dashboard:overview")).content.decode()
    assert "https://" not in page
    assert "/dashboard/vendor/htmx.min.js?v=" in page


def test_the_gc_page_shows_runs_and_only_the_deletions_in_the_users_namespaces(as_viewer):
    run = factories.gc_run(deletions=[("team-a", "pod-a"), ("team-b", "pod-b")])
    factories.gc_run(namespace="team-b")
    listing = as_viewer.get(reverse("dashboard:gc")).content.decode()
    assert f"#{run.pk}" in listing
    assert "team-b" not in listing
    detail = as_viewer.get(reverse("dashboard:gc-run", args=[run.pk])).content.decode()
    assert "pod-a" in detail
    assert "pod-b" not in detail


def test_a_cluster_wide_run_shows_a_tenant_only_its_own_deletions_and_failures(as_viewer):
    run = factories.gc_run(
        deletions=[("team-a", "pod-a"), ("team-secret", "payroll-pod")],
        failures=[
            {"what": "delete Pod team-secret/payroll-0", "namespace": "team-secret", "error": "x"},
            {"what": "delete Pod team-a/mine-0", "namespace": "team-a", "status": 500, "error": "y"},
            {"what": "list workflow pods", "namespace": "", "status": 500, "error": "z"},
            {"what": "delete Pod team-secret/legacy-0", "status": 500, "error": "recorded before namespaces"},
        ],
        note="Stopped by an unexpected error: team-secret is on fire",
        skipped=12345,
    )
    detail = as_viewer.get(reverse("dashboard:gc-run", args=[run.pk])).content.decode()
    assert "pod-a" in detail
    assert "team-a/mine-0" in detail
    assert "team-secret" not in detail
    assert "list workflow pods" not in detail
    assert "12345" not in detail
    listing = as_viewer.get(reverse("dashboard:gc")).content.decode()
    assert f"#{run.pk}" in listing
    assert "12345" not in listing
    overview = as_viewer.get(reverse("dashboard:overview")).content.decode()
    assert "12345" not in overview


def test_a_run_over_one_readable_namespace_shows_its_figures(as_viewer):
    run = factories.gc_run(namespace="team-a", deletions=[("team-a", "pod-a")], skipped=4242)
    assert "4242" in as_viewer.get(reverse("dashboard:gc-run", args=[run.pk])).content.decode()
    assert "4242" in as_viewer.get(reverse("dashboard:gc")).content.decode()


def test_staff_see_cluster_wide_figures_but_only_the_deletions_of_namespaces_they_can_read(viewer, client):
    viewer.is_staff = True
    viewer.save()
    client.force_login(viewer)
    run = factories.gc_run(deletions=[("team-a", "pod-a"), ("team-secret", "payroll-pod")], skipped=12345)
    detail = client.get(reverse("dashboard:gc-run", args=[run.pk])).content.decode()
    assert "12345" in detail
    assert "payroll-pod" not in detail
    assert "12345" in client.get(reverse("dashboard:gc")).content.decode()


def test_a_superuser_sees_every_failure(admin_client):
    run = factories.gc_run(failures=[{"what": "delete Pod team-secret/x", "namespace": "team-secret"}])
    assert "team-secret/x" in admin_client.get(reverse("dashboard:gc-run", args=[run.pk])).content.decode()


def test_the_tensorboard_list_offers_stop_only_where_the_user_may_write(as_viewer, as_editor):
    factories.tensorboard("tb-a")
    assert b"Stop<span" not in as_viewer.get(reverse("dashboard:tensorboards")).content
    assert b"Stop<span" in as_editor.get(reverse("dashboard:tensorboards")).content


@pytest.mark.parametrize("kind", ["TFJob", "JAXJob"])
def test_a_tensorboard_of_a_training_job_links_to_that_job_whatever_its_kind(as_viewer, kind):
    factories.tensorboard("tb-job", source_kind=kind, source_name="spmd")
    page = as_viewer.get(reverse("dashboard:tensorboards")).content.decode()
    assert reverse("dashboard:job-by-name", args=["team-a", kind, "spmd"]) in page


@pytest.mark.parametrize("name", ["jobs", "trainjobs", "sweeps", "tensorboards"])
def test_a_superusers_filter_by_a_namespace_with_no_rows_yet_lists_nothing_instead_of_refusing(
    name, django_user_model
):
    """Where "Open all trials in TensorBoard" leads, before the mirror has the new TensorBoard."""
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root", password="x"))
    page = client.get(reverse(f"dashboard:{name}"), {"namespace": "team-new"}).content.decode()
    assert "Select a valid choice" not in page
    assert '<option value="team-new" selected>team-new</option>' in page
    refused = client.get(reverse(f"dashboard:{name}"), {"namespace": "Not A Namespace"}).content.decode()
    assert "Select a valid choice" in refused


def test_a_users_filter_offers_only_their_grants_whatever_the_request_names(as_viewer):
    page = as_viewer.get(reverse("dashboard:tensorboards"), {"namespace": "team-b"}).content.decode()
    assert "Select a valid choice" in page
    assert 'value="team-b"' not in page
