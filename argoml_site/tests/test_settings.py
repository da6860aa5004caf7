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
)


def start_django(**overrides: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in CONFIG_VARIABLES}
    env.update(overrides)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
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
    ],
)
def test_bad_configuration_fails_at_start_up_naming_the_variable(overrides, message):
    result = start_django(**overrides)
    assert result.returncode != 0
    assert message in result.stderr


def test_debug_alone_starts_on_the_embedded_defaults():
    result = start_django(DEBUG="true")
    assert result.returncode == 0, result.stderr
    assert "started" in result.stdout


def test_the_secret_key_can_be_read_from_a_file(tmp_path):
    secret = tmp_path / "secret-key"
    secret.write_text("from-a-file\n")
    result = start_django(SECRET_KEY_FILE=str(secret))
    assert result.returncode == 0, result.stderr
