"""Production settings pass `check --deploy`, and the project's own checks refuse unsafe
configurations (reliability.md case 42)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.processes import ROOT

PRODUCTION = {
    "DEBUG": "0",
    "BEAMWEAVER_HTTPS": "1",
    "SECRET_KEY": "x7$kQ2!pZ9@vL4#mN8^bR1&cT6*wY3(eU5)hJ0_gF+dS-aA=qW[oI]lK{jH}",
    "ALLOWED_HOSTS": "review.example.com",
    "DATABASE_URL": "postgresql://bw:pw@db.example.com:5432/beamweaver",
    "REDIS_URL": "redis://redis.example.com:6379/0",
    "EMAIL_HOST": "smtp.example.com",
}


def check(**env: str) -> subprocess.CompletedProcess[str]:
    # Only what a production process would have: no test-only switches such as
    # DJANGO_ALLOW_ASYNC_UNSAFE (set by the browser tests' live server).
    clean = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "check", "--deploy", "--fail-level", "WARNING"],
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        check=False,
        capture_output=True,
        text=True,
    )


def test_production_settings_pass_check_deploy_with_no_warning() -> None:
    """BEAMWEAVER_HTTPS=1 and a real EMAIL_HOST: clean, warnings included."""
    result = check(**PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.parametrize(
    ("override", "check_id"),
    [
        ({"ALLOWED_HOSTS": "*"}, "beamweaver.E001"),
        ({"ALLOWED_HOSTS": ".example.com"}, "beamweaver.E001"),
        ({"REDIS_URL": ""}, "beamweaver.E002"),
        ({"DEBUG": "1"}, "security.W018"),
        ({"BEAMWEAVER_HTTPS": "0"}, "security.W012"),
        ({"SECRET_KEY": "short"}, "security.W009"),
        # Issue 13, finding 7: mail to the console prints password-reset links to the log.
        ({"EMAIL_HOST": ""}, "beamweaver.W040"),
        ({"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}, "beamweaver.W040"),
        ({"EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend"}, "beamweaver.W040"),
    ],
)
def test_unsafe_production_settings_fail_the_checks(
    override: dict[str, str], check_id: str
) -> None:
    result = check(**{**PRODUCTION, **override})
    assert result.returncode != 0
    assert check_id in result.stdout + result.stderr


def test_the_console_mail_warning_says_how_to_fix_it() -> None:
    result = check(**{**PRODUCTION, "EMAIL_HOST": ""})

    output = result.stdout + result.stderr
    assert "beamweaver.W040" in output and "EMAIL_HOST" in output
    assert "password-reset" in output
