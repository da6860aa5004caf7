"""Content-Security-Policy: every response carries it, and the pages that matter render under it in a real
Chromium with no violation (the dashboard with htmx and plotly, the admin, the Swagger UI)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from access.models import NamespaceGrant, Role
from dashboard.tests import factories
from dashboard.tests.browser import sign_in
from hyperparam.models import Trial
from web.csp import PLOTS_POLICY, POLICY

PASSWORD = "a-long-password-1"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/dashboard/login/", "/healthz", "/api/namespaces/", "/admin/login/"])
def test_every_response_carries_the_policy(client, path):
    assert client.get(path)["Content-Security-Policy"] == POLICY


def test_the_policy_allows_only_our_own_origin():
    directives = dict(part.split(" ", 1) for part in POLICY.split("; "))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in POLICY


def test_the_plots_policy_relaxes_only_eval_and_inline_styles():
    directives = dict(part.split(" ", 1) for part in PLOTS_POLICY.split("; "))
    assert directives["script-src"] == "'self' 'unsafe-eval'"  # plotly's WebGL traces, no inline script
    assert directives["style-src"] == "'self' 'unsafe-inline'"
    strict = dict(part.split(" ", 1) for part in POLICY.split("; "))
    assert {k: v for k, v in directives.items() if k not in ("script-src", "style-src")} == {
        k: v for k, v in strict.items() if k not in ("script-src", "style-src")
    }


@pytest.mark.django_db
def test_the_policy_can_be_turned_off(client, settings):
    settings.CONTENT_SECURITY_POLICY = ""
    assert "Content-Security-Policy" not in client.get("/healthz")


@pytest.fixture
def staff(django_user_model):
    user = django_user_model.objects.create_superuser("ada", "ada@localhost", PASSWORD)
    NamespaceGrant.objects.create(user=user, namespace="team-a", role=Role.EDITOR)
    return user


@pytest.fixture
def data():
    job = factories.job("mnist", phase="Failed", state_reason="BackoffLimitExceeded",
                        completion_time=factories.T0 + timedelta(minutes=5))  # fmt: skip
    sweep = factories.sweep("lr-sweep", phase="Succeeded", trials_total=30, trials_finished=30)
    Trial.objects.bulk_create(factories.trial_rows(sweep, 30))
    run = factories.gc_run(deletions=[("team-a", "pod-a")])
    return job, sweep, run


def violations_on(page, url: str, ready: str) -> list[str]:
    """Console errors and CSP violation events while `url` loads and settles."""
    seen: list[str] = []
    page.on("console", lambda message: seen.append(message.text) if message.type == "error" else None)
    page.goto(url)
    page.wait_for_selector(ready)
    page.wait_for_load_state("networkidle")
    reported = page.evaluate("window.__csp || []")
    return seen + reported


REPORT_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation",
    (e) => window.__csp.push("CSP violation: " + e.violatedDirective + " " + e.blockedURI));
"""


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_dashboard_admin_and_swagger_render_with_no_csp_violation(live_server, page, staff, data):
    job, sweep, run = data
    page.add_init_script(REPORT_VIOLATIONS)
    base = live_server.url
    sign_in(page, base, "ada", PASSWORD)
    pages = [
        ("/dashboard/", "h2:has-text('Recent failures')"),
        ("/dashboard/jobs/", "#job-table"),
        (f"/dashboard/jobs/{job.pk}/", "#job-phase"),
        (f"/dashboard/sweeps/{sweep.pk}/", "#sweep-plots .main-svg"),
        ("/dashboard/tensorboards/", "h1"),
        (f"/dashboard/gc/{run.pk}/", "h1"),
        ("/admin/", "#site-name"),
        ("/admin/access/namespacegrant/", "#result_list"),
        ("/admin/access/namespacegrant/add/", "#namespacegrant_form"),
        ("/api/docs/", ".swagger-ui .info"),
    ]
    found = {path: violations_on(page, base + path, ready) for path, ready in pages}
    page.goto(base + "/dashboard/submit/")
    broken = {"apiVersion": "argoml.io/v1alpha1", "kind": "TFJob",
              "metadata": {"name": "Bad_Name", "namespace": "team-a"}, "spec": {}}  # fmt: skip
    page.fill("#id_manifest", json.dumps(broken))
    page.click("button[value=preview]")
    page.wait_for_selector("#problems")
    found["/dashboard/submit/ (problems)"] = page.evaluate("window.__csp")
    assert page.evaluate("document.activeElement.id") == "problems"
    assert {path: errors for path, errors in found.items() if errors} == {}
