"""BeamWeaver installed into an existing Django project (docs/production.md, Embedding).

A host site is written to a temporary directory (`host_project`): its own settings with
`configure(globals())`, a custom user model logging in by e-mail, its own login page and
page frame, the URLs included under `/review/`, and `beamweaver_application` in its
asgi.py. BeamWeaver comes from a wheel built from this tree and `pip install`ed into a
directory of its own (so nothing is imported from the source tree), on a database of its
own. The test migrates it, serves it with daphne (real processes, in-process workers)
and drives it as a reviewer and an administrator would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from websockets.sync.client import connect

from tests.browser.conftest import _free_port, _wait_until_up
from tests.operations import host_project
from tests.operations.http import Browser, csrf_token, hidden_fields
from tests.support.processes import ROOT, stop
from tests.support.waiting import wait_for

pytestmark = pytest.mark.processes

PASSWORD = "a host password 123"


@dataclass
class Host:
    base: str
    directory: Path
    env: dict[str, str]
    conninfo: str
    site_packages: Path

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=self.directory,
            env=self.env,
            capture_output=True,
            check=False,
            text=True,
            timeout=180,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()


def _install(tmp: Path) -> Path:
    """Build a wheel of this tree and pip-install it (without its dependencies, which
    the test environment has) into a directory of its own."""
    source = tmp / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("beamweaver_core", "reviews"):
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "-w", str(tmp / "dist"), str(source)], check=True, timeout=300
    )
    wheel = next((tmp / "dist").glob("beamweaver-*.whl"))
    site = tmp / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(site), str(wheel)], check=True, timeout=300
    )
    return site


@pytest.fixture(scope="module")
def host(
    django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Host]:
    from django.db import connection

    tmp = tmp_path_factory.mktemp("host")
    site = _install(tmp)
    directory = host_project.write(tmp / "project")
    name = f"bw_host_{uuid.uuid4().hex[:10]}"
    with django_db_blocker.unblock():
        connection.ensure_connection()
        info = connection.connection.info
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
    conninfo = psycopg.conninfo.make_conninfo(
        dbname=name, user=info.user, password=info.password or "", host=info.host, port=info.port
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("BEAMWEAVER_", "DJANGO_"))},
        "PYTHONPATH": f"{site}{os.pathsep}{directory}",
        "DJANGO_SETTINGS_MODULE": "hostsite.settings",
        "HOST_DB_NAME": name,
        "HOST_DB_USER": info.user,
        "HOST_DB_PASSWORD": info.password or "",
        "HOST_DB_HOST": info.host,
        "HOST_DB_PORT": str(info.port),
    }
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    port = _free_port()
    result = Host(f"http://127.0.0.1:{port}", directory, env, conninfo, site)
    proc = None
    try:
        result.manage("makemigrations", "accounts")
        result.manage("migrate", "--no-input")
        log = tmp / "daphne.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "daphne",
                    "-b",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "hostsite.asgi:application",
                ],
                cwd=directory,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        _wait_until_up(f"{result.base}/review/healthz", proc, log)
        yield result
    finally:
        if proc is not None:
            stop(proc)
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _script(host: Host, code: str) -> Any:
    """Run Python in the host project (Django set up) and return the JSON it prints."""
    out = host.manage("shell", "-c", code)
    return json.loads(out.strip().splitlines()[-1])


def test_beamweaver_runs_inside_the_host_project(host: Host) -> None:
    # Installed from the wheel, not imported from this tree.
    where = _script(
        host,
        "import json, beamweaver_core, reviews; print(json.dumps([beamweaver_core.__file__, reviews.__file__]))",
    )
    assert all(path.startswith(str(host.site_packages)) for path in where), where
    assert "System check identified no issues" in host.manage("check")

    users = _script(
        host,
        "import json\n"
        "from django.contrib.auth import get_user_model\n"
        "from django.contrib.auth.models import Permission\n"
        "Account = get_user_model()\n"
        f"alice = Account.objects.create_user('alice@host.example', {PASSWORD!r}, display_name='Alice')\n"
        "alice.user_permissions.add(Permission.objects.get(codename='review'))\n"
        f"Account.objects.create_superuser('root@host.example', {PASSWORD!r})\n"
        "from beamweaver_core.runtime import service\n"
        "run = service.start_run('host_flow', {})\n"
        "print(json.dumps({'thread': run.thread_id, 'model': Account._meta.label}))",
    )
    assert users["model"] == "accounts.Account"
    thread = users["thread"]

    # The host's login page and user model.
    alice = Browser(host.base)
    bounced = alice.request("/review/", follow=False)
    assert bounced.status == 302 and bounced.headers["Location"] == "/signin/?next=/review/"
    inbox = alice.log_in("/signin/", "alice@host.example", PASSWORD, next_path="/review/")
    assert inbox.status == 200 and inbox.url == f"{host.base}/review/"
    assert "HOST-FRAME alice@host.example" in inbox.text  # the host's page frame
    assert "beamweaver/css/beamweaver.css" in inbox.text  # with BeamWeaver's assets

    # The in-process worker runs the host's graph to its review.
    rows = wait_for(
        lambda: host.query("SELECT id FROM bw_review_item WHERE thread_id = %s", thread),
        30,
        "the run to pause",
        every=0.2,
    )
    item = rows[0][0]
    assert f"/review/items/{item}/" in alice.request("/review/").text

    # The live inbox over the host's ASGI application, authenticated by its session.
    headers = {"Cookie": f"sessionid={alice.cookie('sessionid')}", "Origin": host.base}
    with connect(
        f"ws://127.0.0.1:{host.base.rsplit(':', 1)[1]}/ws/inbox/",
        additional_headers=headers,
        open_timeout=10,
    ) as socket:
        snapshot = socket.recv(timeout=15)
        assert f"/review/items/{item}/" in str(snapshot)

        # A decision through the inbox's form, as the host's user.
        page = alice.request(f"/review/items/{item}/")
        assert page.status == 200 and "Ship it?" in page.text
        fields = {
            **hidden_fields(page.text),
            "csrfmiddlewaretoken": csrf_token(page.text),
            "d0-type": "approve",
        }
        decided = alice.request(f"/review/items/{item}/decide/", fields)
        assert decided.status == 200, decided.text[:2000]
        pushed = socket.recv(timeout=15)
        assert str(item) in str(pushed)

    wait_for(
        lambda: (
            host.query("SELECT status FROM bw_thread WHERE id = %s", thread)[0][0] == "completed"
        ),
        30,
        "the resumed run to finish",
        every=0.2,
    )
    (by,) = host.query(
        "SELECT a.email FROM bw_review_decision d JOIN accounts_account a ON a.id = d.user_id"
    )[0]
    assert by == "alice@host.example"

    # The host's admin, with BeamWeaver's models in it.
    root = Browser(host.base)
    root.log_in("/siteadmin/login/", "root@host.example", PASSWORD, next_path="/siteadmin/")
    index = root.request("/siteadmin/")
    assert (
        index.status == 200 and "Worker heartbeats" in index.text and "Review items" in index.text
    )
    runs = root.request("/siteadmin/beamweaver_core/run/")
    assert runs.status == 200 and thread in runs.text
    # Searching decisions by reviewer asks the host's login field (`email`).
    searched = root.request("/siteadmin/reviews/decision/?q=alice%40host")
    table = searched.text[searched.text.find('id="result_list"') :]
    assert searched.status == 200 and "alice@host.example" in table
    missed = root.request("/siteadmin/reviews/decision/?q=nobody%40host")
    assert missed.status == 200 and 'id="result_list"' not in missed.text
    beats = root.request("/siteadmin/beamweaver_core/workerheartbeat/")
    assert beats.status == 200 and "icon-yes" in beats.text  # the in-process worker is alive

    # Probes, unauthenticated.
    anonymous = Browser(host.base)
    assert anonymous.request("/review/healthz").status == 200
    ready = anonymous.request("/review/readyz")
    assert ready.status == 200 and json.loads(ready.text)["status"] == "ok"
