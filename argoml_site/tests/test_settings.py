"""A bad deployment stops at start-up with a message naming the variable to fix."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONFIG_VARIABLES = (
    "DEBUG",
    "SECRET_KEY",
    "SECRET_KEY_FILE",
    "DATABASE_URL",
    "REDIS_URL",
    "LOG_LEVEL",
    "LOG_FORMAT",
    "ALLOWED_HOSTS",
    "HTTPS_ONLY",
    "SECURE_COOKIES",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_PROXY_SSL_HEADER",
    # Set in this test process by the browser fixture (Playwright runs an event loop); never in a deployment.
    "DJANGO_ALLOW_ASYNC_UNSAFE",
)
STRONG_KEY = "k3y-" + "x7Qp2vL9mZ4rT8wB1nC6yH0sD5fG3jK" * 2


def start_django(*argv: str, **overrides: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in CONFIG_VARIABLES}
    env.update(overrides)
    return subprocess.run(
        list(argv) or [sys.executable, "-c", "import django; django.setup(); print('started')"],
        cwd=REPO,
        env={**env, "DJANGO_SETTINGS_MODULE": "argoml_site.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({}, "SECRET_KEY (or SECRET_KEY_FILE) is required unless DEBUG=true"),
        ({"DEBUG": "perhaps"}, "DEBUG='perhaps' is not a boolean"),
        ({"SECRET_KEY": "k", "DATABASE_URL": "nosuchdb://x"}, "DATABASE_URL is not a database URL"),
        (
            {"SECRET_KEY": "k", "REDIS_URL": "http://127.0.0.1:6379"},
            "REDIS_URL='http://127.0.0.1:6379' must start",
        ),
        ({"SECRET_KEY": "k", "LOG_LEVEL": "LOUD"}, "LOG_LEVEL='LOUD' must be one of"),
        ({"SECRET_KEY_FILE": "/nonexistent/secret"}, "SECRET_KEY_FILE='/nonexistent/secret' cannot be read"),
        ({"SECRET_KEY": "k", "SECURE_PROXY_SSL_HEADER": "X Fwd"}, "SECURE_PROXY_SSL_HEADER='X Fwd' must be"),
        ({"SECRET_KEY": "k", "SECURE_HSTS_SECONDS": "-1"}, "SECURE_HSTS_SECONDS=-1 is below its minimum"),
        (
            {"SECRET_KEY": "k", "TRAINER_STATUS_SERVER_URL": "http://argoml-webhooks.argoml.svc"},
            "TRAINER_STATUS_SERVER_URL='http://argoml-webhooks.argoml.svc' must start with https://",
        ),
        (
            {"SECRET_KEY": "k", "TRAINER_STATUS_SERVER_URL": "https://argoml-webhooks.argoml.svc"},
            "TRAINER_STATUS_SERVER_URL needs TRAINER_STATUS_CA_CERT_PATH",
        ),
        ({"SECRET_KEY": "k", "MAX_REPLICAS_PER_JOB": "x"}, "MAX_REPLICAS_PER_JOB='x' is not an integer"),
        ({"SECRET_KEY": "k", "MAX_TRIALS_PER_SWEEP": "0"}, "MAX_TRIALS_PER_SWEEP=0 is below its minimum"),
    ],
)
def test_bad_configuration_fails_at_start_up_naming_the_variable(overrides, message):
    result = start_django(**overrides)
    assert result.returncode != 0
    assert message in result.stderr


def test_a_bound_set_in_the_environment_is_the_one_every_door_reads():
    script = "import django; django.setup(); import limits; print(limits.current().replicas_per_job)"
    result = start_django(sys.executable, "-c", script, DEBUG="true", MAX_REPLICAS_PER_JOB="64")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["64"]


def test_debug_alone_starts_on_the_embedded_defaults():
    result = start_django(DEBUG="true")
    assert result.returncode == 0, result.stderr
    assert "started" in result.stdout


def test_the_secret_key_can_be_read_from_a_file(tmp_path):
    secret = tmp_path / "secret-key"
    secret.write_text("from-a-file\n")
    result = start_django(SECRET_KEY_FILE=str(secret))
    assert result.returncode == 0, result.stderr


def check_deploy(**overrides: str) -> subprocess.CompletedProcess[str]:
    settings = {"SECRET_KEY": STRONG_KEY, "ALLOWED_HOSTS": "argoml.example.com", **overrides}
    argv = (sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    return start_django(*argv, **settings)


def test_production_settings_with_https_pass_the_deployment_checks_with_no_warnings():
    result = check_deploy(HTTPS_ONLY="true", SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto")
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_without_https_the_deployment_checks_name_what_is_missing():
    result = check_deploy()
    assert result.returncode != 0
    assert "security.W004" in result.stderr  # HSTS
    assert "security.W008" in result.stderr  # the redirect to https


SHOW_HTTPS_SETTINGS = """
import django; django.setup()
from django.conf import settings as s
print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_PRELOAD, s.SESSION_COOKIE_SECURE,
      s.SECURE_PROXY_SSL_HEADER)
"""


@pytest.mark.parametrize(
    ("overrides", "shown"),
    [
        ({}, "False 0 False True None"),
        ({"HTTPS_ONLY": "true"}, "True 31536000 True True None"),
        ({"HTTPS_ONLY": "true", "SECURE_HSTS_PRELOAD": "false", "SECURE_HSTS_SECONDS": "60"},
         "True 60 False True None"),
        ({"SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"},
         "False 0 False True ('HTTP_X_FORWARDED_PROTO', 'https')"),
        ({"SECURE_PROXY_SSL_HEADER": "X-Scheme: HTTPS"}, "False 0 False True ('HTTP_X_SCHEME', 'HTTPS')"),
        ({"DEBUG": "true"}, "False 0 False False None"),
    ],
)  # fmt: skip
def test_https_only_turns_on_the_redirect_hsts_and_secure_cookies_each_overridable(overrides, shown):
    result = start_django(sys.executable, "-c", SHOW_HTTPS_SETTINGS, SECRET_KEY="k", **overrides)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == shown
