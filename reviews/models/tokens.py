"""API tokens: how services authenticate to the review API (`reviews.api`).

A token acts as its user (with that user's permissions and review policies), so it is
created by its owner, or by a superuser (in the admin) or an operator (`manage.py
api_token create`) for another reviewer; every token issued or revoked is audited. Only
its SHA-256 is stored; the token itself is shown once, when it is created. Tokens are
random 256-bit secrets, so a fast hash is enough: there is nothing to brute-force.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from beamweaver_core.users import User

TOKEN_PREFIX = "bw"
LAST_USED_PRECISION = timedelta(minutes=1)
"""How stale `last_used_at` may be: a token in use is written once a minute, not per request."""


def hash_token(raw: str) -> str:
    """What is stored of a token: its SHA-256 (hex)."""
    return hashlib.sha256(raw.encode()).hexdigest()


def token_key(raw: str) -> str | None:
    """The public key a token's text `bw_<key>_<secret>` names, or None (not a token)."""
    parts = raw.split("_")
    if len(parts) < 3 or parts[0] != TOKEN_PREFIX:
        return None
    return parts[1]


def generate() -> tuple[str, str]:
    """A new token's public key and its full secret text `bw_<key>_<secret>`."""
    key = secrets.token_hex(4)
    return key, f"{TOKEN_PREFIX}_{key}_{secrets.token_urlsafe(32)}"


def _issuer(by: User | None, source: str) -> str:
    if by is not None:
        return by.get_username() + (" (superuser)" if by.is_superuser else "")
    return "manage.py api_token" if source == "command" else source


def _audit(token: ApiToken, action: str, by: User | None, source: str) -> None:
    """An audit event (no item) naming the token, its user and who acted."""
    from reviews.models.audit import AuditEvent

    verb = "issued for" if action == "token_issued" else "of"
    message = (
        f"API token {token.name!r} ({TOKEN_PREFIX}_{token.key}_…) {verb} "
        f"{token.user.get_username()}, by {_issuer(by, source)}."
    )
    AuditEvent.objects.about(None, action, message, actor=by, source=source)


class ApiTokenManager(models.Manager["ApiToken"]):
    def issue(
        self,
        user: User,
        name: str,
        *,
        expires_at: datetime | None = None,
        by: User | None = None,
        source: str = "code",
    ) -> tuple[ApiToken, str]:
        """A new token for `user`, and its secret text (shown once, never stored).
        Audited (`token_issued`) as done by `by` (None: the command or code) from
        `source` ("admin", "command", "code")."""
        token = self.model(user=user, name=name, expires_at=expires_at)
        return token, self.save_new(token, by=by, source=source)

    def save_new(self, token: ApiToken, *, by: User | None = None, source: str = "code") -> str:
        """Give the unsaved `token` a fresh key and save it, audited; its secret text."""
        for _ in range(5):
            key, raw = generate()
            token.key, token.hashed = key, hash_token(raw)
            try:
                with transaction.atomic():
                    token.save(force_insert=True)
                    _audit(token, "token_issued", by, source)
            except IntegrityError:
                continue
            return raw
        raise RuntimeError("Could not draw a unique token key; try again.")

    def authenticate(self, raw: str) -> ApiToken | None:
        """The live token whose secret is `raw`, or `None` (unknown, revoked, expired)."""
        key = token_key(raw)
        if key is None:
            return None
        token = self.select_related("user").filter(key=key).first()
        return token if token is not None and token.accepts(raw) else None


class ApiToken(models.Model):
    """A service's credential for the review API, acting as `user`."""

    name = models.CharField(max_length=100, help_text="Which service uses it.")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_api_tokens"
    )
    key = models.CharField(max_length=16, unique=True, help_text="Public part of the token.")
    hashed = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenManager()

    class Meta:
        db_table = "bw_review_api_token"
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({TOKEN_PREFIX}_{self.key}_…) for {self.user}"

    def accepts(self, raw: str) -> bool:
        """Whether `raw` is this token's secret text (compared in constant time) and the
        token is live."""
        return hmac.compare_digest(self.hashed, hash_token(raw)) and self.is_live

    def touch(self) -> None:
        """Record a use, at most once per `LAST_USED_PRECISION` (not a write per request)."""
        now = timezone.now()
        if self.last_used_at is None or now - self.last_used_at > LAST_USED_PRECISION:
            ApiToken.objects.filter(pk=self.pk).update(last_used_at=now)
            self.last_used_at = now

    @property
    def is_live(self) -> bool:
        now = timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    def revoke(self, *, by: User | None = None, source: str = "code") -> bool:
        """Stop accepting the token (kept for the record), audited (`token_revoked`);
        whether it was live until now."""
        if self.revoked_at is not None:
            return False
        with transaction.atomic():
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])
            _audit(self, "token_revoked", by, source)
        return True


__all__ = ["LAST_USED_PRECISION", "TOKEN_PREFIX", "ApiToken", "generate", "hash_token", "token_key"]
