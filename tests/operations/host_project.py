"""A minimal existing Django site, written to a directory, that adds BeamWeaver the way
docs/production.md says: its own settings, user model (`accounts.Account`, logging in by
e-mail, no `username` field), login page at `/signin/`, page frame, and a graph of its
own; BeamWeaver from an installed wheel."""

from __future__ import annotations

import textwrap
from pathlib import Path

FILES = {
    "manage.py": """
        import os
        import sys

        if __name__ == "__main__":
            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hostsite.settings")
            from django.core.management import execute_from_command_line

            execute_from_command_line(sys.argv)
    """,
    "hostsite/__init__.py": "",
    "hostsite/settings.py": """
        import os
        from pathlib import Path

        BASE_DIR = Path(__file__).resolve().parent.parent
        SECRET_KEY = "host-secret-key-for-tests-only-0123456789abcdefghij"
        DEBUG = False
        ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
        INSTALLED_APPS = [
            "django.contrib.admin",
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "django.contrib.sessions",
            "django.contrib.messages",
            "django.contrib.staticfiles",
            "accounts",
            "hostapp",
        ]
        MIDDLEWARE = [
            "django.middleware.security.SecurityMiddleware",
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.middleware.common.CommonMiddleware",
            "django.middleware.csrf.CsrfViewMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
            "django.contrib.messages.middleware.MessageMiddleware",
            "django.middleware.clickjacking.XFrameOptionsMiddleware",
        ]
        ROOT_URLCONF = "hostsite.urls"
        ASGI_APPLICATION = "hostsite.asgi.application"
        TEMPLATES = [
            {
                "BACKEND": "django.template.backends.django.DjangoTemplates",
                "DIRS": [BASE_DIR / "templates"],
                "APP_DIRS": True,
                "OPTIONS": {"context_processors": [
                    "django.template.context_processors.request",
                    "django.contrib.auth.context_processors.auth",
                    "django.contrib.messages.context_processors.messages",
                ]},
            }
        ]
        DATABASES = {
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": os.environ["HOST_DB_NAME"],
                "USER": os.environ["HOST_DB_USER"],
                "PASSWORD": os.environ.get("HOST_DB_PASSWORD", ""),
                "HOST": os.environ["HOST_DB_HOST"],
                "PORT": os.environ["HOST_DB_PORT"],
            }
        }
        AUTH_USER_MODEL = "accounts.Account"
        LOGIN_URL = "/signin/"
        STATIC_URL = "static/"
        USE_TZ = True
        DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
        BEAMWEAVER = {"GRAPHS": {"host_flow": "hostapp.agents:flow"}, "POLL_SECONDS": 0.2}

        from beamweaver_core.embed.settings import configure  # noqa: E402

        configure(globals())
    """,
    "hostsite/urls.py": """
        from django.contrib import admin
        from django.contrib.auth import views as auth_views
        from django.http import HttpResponse
        from django.urls import include, path

        urlpatterns = [
            path("", lambda request: HttpResponse("the host's home page")),
            path("signin/", auth_views.LoginView.as_view(template_name="signin.html"), name="signin"),
            path("siteadmin/", admin.site.urls),
            path("review/", include("beamweaver_core.embed.urls")),
        ]
    """,
    "hostsite/asgi.py": """
        import os

        from django.core.asgi import get_asgi_application

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hostsite.settings")
        django_application = get_asgi_application()

        from beamweaver_core.embed.asgi import beamweaver_application  # noqa: E402

        application = beamweaver_application(django_application)
    """,
    "accounts/__init__.py": "",
    "accounts/models.py": """
        from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
        from django.db import models


        class AccountManager(BaseUserManager):
            def create_user(self, email, password=None, **extra):
                user = self.model(email=self.normalize_email(email), **extra)
                user.set_password(password)
                user.save(using=self._db)
                return user

            def create_superuser(self, email, password=None, **extra):
                return self.create_user(email, password, is_staff=True, is_superuser=True, **extra)


        class Account(AbstractBaseUser, PermissionsMixin):
            email = models.EmailField(unique=True)
            display_name = models.CharField(max_length=100, blank=True)
            is_staff = models.BooleanField(default=False)
            is_active = models.BooleanField(default=True)

            USERNAME_FIELD = "email"
            EMAIL_FIELD = "email"
            objects = AccountManager()
    """,
    "accounts/admin.py": """
        from django.contrib import admin

        from accounts.models import Account

        admin.site.register(Account)
    """,
    "hostapp/__init__.py": "",
    "hostapp/agents.py": """
        from beamweaver_core.agent import HITL, ActionRequest, ReviewConfig, ReviewRequest
        from beamweaver_core.graph import START, Graph, interrupt

        REVIEW = ReviewRequest(
            (ActionRequest(name="ship_order", args={"order": "A-1"}, description="Ship it?"),),
            (ReviewConfig(action_name="ship_order", allowed_decisions=("approve", "reject")),),
        )


        def propose(state):
            answer = interrupt(REVIEW.to_value())
            return {"decisions": list(HITL.validate_decisions(REVIEW, answer))}


        def ship(state):
            return {"shipped": state["decisions"][0]["type"] == "approve"}


        flow = (
            Graph(name="host_flow")
            .add_node("propose", propose)
            .add_node("ship", ship)
            .add_edge(START, "propose")
            .add_edge("propose", "ship")
            .compile()
        )
    """,
    "templates/site_base.html": """
        <!doctype html>
        <html lang="en">
        <head><meta charset="utf-8"><title>{% block title %}Host{% endblock %}</title>{% block head %}{% endblock %}</head>
        <body hx-headers='{"x-csrftoken": "{{ csrf_token }}"}'>
        <header id="host-frame">HOST-FRAME {{ user.get_username }}</header>
        {% block body %}{% endblock %}
        </body>
        </html>
    """,
    "templates/beamweaver/base.html": """
        {% extends "site_base.html" %}
        {% block head %}{% include "beamweaver/_head.html" %}{% endblock %}
        {% block body %}
        {% include "beamweaver/_banners.html" %}
        <main id="main" {% if ws_url %}hx-ext="ws" ws-connect="{{ ws_url }}"{% endif %}>
          {% include "beamweaver/_live_status.html" %}
          {% block content %}{% endblock %}
        </main>
        {% endblock %}
    """,
    "templates/signin.html": """
        {% extends "site_base.html" %}
        {% block body %}
        <h1>Host sign-in</h1>
        <form method="post">{% csrf_token %}{{ form.as_p }}<input type="hidden" name="next" value="{{ next }}"><button>Sign in</button></form>
        {% endblock %}
    """,
}


def write(root: Path) -> Path:
    """Write the host project under `root`; returns its directory."""
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root
