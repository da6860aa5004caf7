"""The dev stack's output scan (stack_logs): what it flags and what it lets through."""

from argoml_site.tests.stack_logs import offending_lines, report

QUIET = [
    '2025-01-01 10:00:00,000 INFO django.server "GET /dashboard/ HTTP/1.1" 200 5120\n',
    '2025-01-01 10:00:01,000 WARNING django.server "GET /dashboard/jobs/9/ HTTP/1.1" 404 179\n',
    '2025-01-01 10:00:02,000 INFO django.server "GET /api/jobs/?q=%22500%22 HTTP/1.1" 400 60\n',
    "2025-01-01 10:00:03,000 INFO celery.worker reconciled 500 jobs\n",
    "Argo-ML is up: http://127.0.0.1:8000/dashboard/\n",
]


def test_a_quiet_stack_has_nothing_to_report():
    assert offending_lines(QUIET) == []


def test_a_traceback_is_reported_with_its_frames_and_exception():
    lines = [*QUIET, "Traceback (most recent call last):\n", '  File "x.py", line 1\n', "KeyError: 'a'\n"]
    [found] = offending_lines(lines)
    assert found.startswith("Traceback (most recent call last):")
    assert found.endswith("KeyError: 'a'\n")


def test_a_web_servers_5xx_is_reported_from_its_access_line_or_djangos_request_log():
    lines = [
        '2025-01-01 10:00:00,000 ERROR django.server "POST /api/jobs/ HTTP/1.1" 503 77\n',
        "2025-01-01 10:00:00,000 ERROR django.request Internal Server Error: /webhooks/validate\n",
        *QUIET,
    ]
    found = offending_lines(lines)
    assert [text.splitlines()[0] for text in found] == [line.rstrip("\n") for line in lines[:2]]
    assert report(found).startswith("2 traceback(s) or 5xx")
