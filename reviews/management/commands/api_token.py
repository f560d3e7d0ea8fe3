"""`manage.py api_token create|list|revoke`: API tokens for services (the admin does the same).

Whoever runs a management command holds the server's shell and its database credentials
(a superuser in all but name), so the command may create a token for any reviewer, as a
superuser may in the admin; like the admin, it records every token issued or revoked in
the audit log (`token_issued` / `token_revoked`, source `command`)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from beamweaver_core.users import find_user
from reviews.models import ApiToken
from reviews.permissions import can_review


def describe(token: ApiToken) -> dict[str, Any]:
    """A token as JSON (never its secret)."""
    return {
        "id": token.pk,
        "name": token.name,
        "user": token.user.get_username(),
        "key": token.key,
        "created_at": token.created_at.isoformat(),
        "last_used_at": token.last_used_at.isoformat() if token.last_used_at else None,
        "revoked": token.revoked_at is not None,
    }


class Command(BaseCommand):
    help = (
        "Manage API tokens of the review API. `create --user NAME --name SERVICE` prints the "
        "token once (only its hash is stored); `list` shows them; `revoke KEY` stops one. "
        "A token acts as its user, who needs the reviewer permission. Every token issued or "
        "revoked is recorded in the audit log."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="Create a token and print it once.")
        create.add_argument("--user", required=True, help="The user the token acts as.")
        create.add_argument("--name", required=True, help="Which service uses it.")
        sub.add_parser("list", help="List the tokens (without secrets).")
        revoke = sub.add_parser("revoke", help="Revoke a token by its key.")
        revoke.add_argument("key", help="The token's key (the part after 'bw_').")
        for each in (create, sub.choices["list"], revoke):
            each.add_argument("--json", action="store_true", dest="as_json", help="Print JSON.")

    def handle(self, *args: Any, action: str, as_json: bool = False, **options: Any) -> None:
        if action == "create":
            user = find_user(options["user"])
            if user is None or not can_review(user):
                raise CommandError(
                    f"No active user {options['user']!r} with the reviewer permission "
                    "(reviews.review)."
                )
            token, raw = ApiToken.objects.issue(user, options["name"], source="command")
            if as_json:
                self.stdout.write(json.dumps({**describe(token), "token": raw}, sort_keys=True))
            else:
                self.stdout.write(f"{raw}\n(shown once; store it now)")
            return
        if action == "list":
            tokens = [describe(t) for t in ApiToken.objects.select_related("user")]
            if as_json:
                self.stdout.write(json.dumps(tokens, sort_keys=True))
            elif not tokens:
                self.stdout.write("No API tokens.")
            for t in [] if as_json else tokens:
                state = "revoked" if t["revoked"] else "live"
                self.stdout.write(f"bw_{t['key']}_…  {t['name']}  user={t['user']}  {state}")
            return
        found = ApiToken.objects.select_related("user").filter(key=options["key"]).first()
        if found is None:
            raise CommandError(f"No token with key {options['key']!r} (see `api_token list`).")
        found.revoke(source="command")
        if as_json:
            self.stdout.write(json.dumps(describe(found), sort_keys=True))
        else:
            self.stdout.write(f"Revoked {found.name} (bw_{found.key}_…).")
