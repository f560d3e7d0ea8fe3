"""The one redaction policy: what the inbox pages, the API, the admin, the logs and error
reports withhold of untrusted data (tool arguments, model output, reviewer text).

Withheld, and replaced by `[redacted]`, are exactly:

1. **Credential-shaped text**, wherever it appears in a string (only the matching part
   is replaced): OpenAI and Anthropic keys (`sk-...`), GitHub tokens (`ghp_...` and
   kin), Slack tokens (`xoxb-...`), AWS access key ids (`AKIA...`), Google API keys
   (`AIza...`), Stripe secret keys (`sk_live_...`, `rk_live_...`), JWTs, `Bearer <token>`,
   PEM private key blocks, and this project's own API tokens (`bw_<key>_<secret>`).
2. **A credential under a secret name**: the value of a key whose name says it holds a
   secret, when that value is a string shaped like a credential. A name says so when,
   split into words (snake_case, kebab-case, camelCase, dots, spaces), its last word is
   one of `SECRET_WORDS` (`password`, `passwd`, `passphrase`, `secret`, `token`,
   `apikey`, `authorization`, `cookie`, `credential`, `credentials`) or its last two
   words are one of `SECRET_PAIRS` (`api key`, `private key`, `secret key`, `access key`,
   `signing key`, `client secret`, `session key`). So `password`, `db_password`,
   `api_key`, `X-Api-Key`, `accessToken`, `Authorization` and `Set-Cookie` name secrets;
   `auth`, `author`, `bypass_review`, `max_tokens`, `session_id`, `token_count`, `key`
   and `primary_key` do not. A string is shaped like a credential when it is one word of
   printable ASCII (no white space), optionally after an auth scheme (`Bearer `,
   `Basic `, `Token `, `Bot `, `Digest `), at most 4,096 characters.

Nothing else is withheld: an object or a list is always shown key by key (only its
secret leaves withheld), a number, a boolean or null never is, and a string that is not
shaped like a credential is shown even under a secret name (a sentence in a `token`
field is content the reviewer must read). So everything that decides what a call does
is shown; what is withheld is listed by `withheld()` and the inbox says so, and a
reviewer with the `reviews.reveal_secrets` permission can reveal it (audited).

The credential patterns run on RE2, in time linear in the text (they are applied to whole
tool arguments and model output).

In URLs (access logs, log lines) the value of a query parameter with a secret name
(`?token=...`, `?api_key=...`) is withheld too (`redact_url`, `RedactingLogFilter`). In log
lines (`redact_log_text`) so are the value of a header, or of a quoted key, with a
secret name (`Authorization: Basic ...`, `'x-api-key': '...'`, `Cookie: a=1; b=2`), up to
the end of the line or its closing quote, and the password of a URL
(`postgres://user:[redacted]@host`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

import re2

REDACTED = "[redacted]"

SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "apikey",
        "authorization",
        "cookie",
        "credential",
        "credentials",
    }
)
SECRET_PAIRS = frozenset(
    {
        ("api", "key"),
        ("private", "key"),
        ("secret", "key"),
        ("access", "key"),
        ("signing", "key"),
        ("client", "secret"),
        ("session", "key"),
    }
)
MAX_CREDENTIAL_CHARS = 4096


def _latin1() -> Any:
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    return options


_WHITE_SPACE = (
    rb"[\t\n\v\f\r \x1c-\x1f]|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]"
    rb"|\xe2\x81\x9f|\xe3\x80\x80"
)
"""What Python's `str.isspace` calls white space, as UTF-8 bytes: RE2's `\\s` is ASCII only,
and a `Bearer` token after a no-break space was redacted when this ran on Python's `re`."""


# Run on RE2, whose matching time is linear: this pattern is applied to whole tool
# arguments, model output and reviewer text, and on Python's `re` its JWT branch rescanned
# a run of base64 characters from every `eyJ` in it (quadratic: 120 KB of `eyJeyJ...` in
# a tool argument kept a request for its review item busy for most of a minute). It is
# all ASCII, so it runs on the text's UTF-8 bytes read as Latin-1: every byte is a
# character, and text no codec accepts (a lone surrogate) is matched all the same.
_SECRET_VALUE = re2.compile(
    rb"(sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}"  # OpenAI / Anthropic keys
    rb"|[sr]k_live_[A-Za-z0-9]{16,}"  # Stripe secret and restricted keys
    rb"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    rb"|xox[abpr]-[A-Za-z0-9\-]{10,}"  # Slack tokens
    rb"|AKIA[0-9A-Z]{16}"  # AWS access key ids
    rb"|AIza[0-9A-Za-z_\-]{35}"  # Google API keys
    rb"|bw_[0-9a-f]{8}_[A-Za-z0-9_\-]{20,}"  # BeamWeaver API tokens (reviews.models.tokens)
    rb"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"  # JWTs
    rb"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    rb"|(?i:bearer)(?:" + _WHITE_SPACE + rb")+[A-Za-z0-9._\-]{16,})",
    _latin1(),
)
_CREDENTIAL = re.compile(
    rf"(?:(?i:bearer|basic|token|bot|digest) )?[!-~]{{1,{MAX_CREDENTIAL_CHARS}}}"
)
_WORD_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[^A-Za-z0-9]+")
_QUERY_PARAMETER = re.compile(r"(?P<lead>[?&;](?P<name>[^=&#\s]{1,100})=)(?P<value>[^&#\s]*)")


def is_secret_key(name: str) -> bool:
    """Whether a mapping key names a secret (see the module docstring: `password`,
    `api_key`, `accessToken`, `Authorization` do; `auth`, `max_tokens` do not)."""
    words = [w.lower() for w in _WORD_BREAK.split(name) if w]
    if not words:
        return False
    if words[-1] in SECRET_WORDS:
        return True
    return len(words) >= 2 and (words[-2], words[-1]) in SECRET_PAIRS


def is_credential(value: Any) -> bool:
    """Whether `value` is a string shaped like a credential (one word of printable
    ASCII, optionally after an auth scheme)."""
    return isinstance(value, str) and _CREDENTIAL.fullmatch(value) is not None


def redact_text(text: str) -> str:
    """Replace credential-shaped substrings of `text`."""
    cleaned: bytes = _SECRET_VALUE.sub(REDACTED.encode(), text.encode("utf-8", "surrogatepass"))
    return cleaned.decode("utf-8", "surrogatepass")


def _has_secret(text: str) -> bool:
    return _SECRET_VALUE.search(text.encode("utf-8", "surrogatepass")) is not None


def _withholds(key: Any, value: Any) -> bool:
    return isinstance(key, str) and is_secret_key(key) and is_credential(value)


def redact(value: Any) -> Any:
    """A copy of JSON-like `value` with what the policy withholds replaced by
    `[redacted]`."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: (REDACTED if _withholds(k, v) else redact(v)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def pretty_json(value: Any, *, reveal: bool = False) -> str:
    """JSON-like `value` as indented JSON text with sorted keys, redacted unless `reveal`
    (a reviewer who revealed the secrets of a proposal); what JSON cannot hold is shown
    by its `repr`, redacted as text (the policy cannot see its keys: convert such objects
    to data first where they may hold secrets). The inbox pages and the admin show stored
    data this way."""
    shown = value if reveal else redact(value)
    shown_object = repr if reveal else _redacted_repr
    return json.dumps(shown, indent=2, sort_keys=True, ensure_ascii=False, default=shown_object)


def _redacted_repr(value: Any) -> str:
    return redact_text(repr(value))


def withheld(value: Any, path: str = "") -> list[str]:
    """The paths (`config.api_key`, `to.0`, "" for `value` itself) of what `redact`
    withholds in `value`, whole or in part."""
    if isinstance(value, str):
        return [path] if _has_secret(value) else []
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            found.extend([where] if _withholds(key, item) else withheld(item, where))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found.extend(withheld(item, f"{path}.{index}" if path else str(index)))
    return found


def redact_url(url: str) -> str:
    """`url` (or any text holding URLs) with credential-shaped text and the values of
    query parameters with a secret name withheld."""

    def parameter(match: re.Match[str]) -> str:
        name = match.group("name")
        if is_secret_key(name) or name.lower() in ("key", "sig", "signature"):
            return match.group("lead") + REDACTED
        return match.group(0)

    return _QUERY_PARAMETER.sub(parameter, redact_text(url))


_HEADER_NAME = re.compile(
    r"(?P<quote>['\"]?)(?P<name>[A-Za-z][A-Za-z0-9_\-]{0,99})(?P=quote)[ \t]*:[ \t]*"
)
_HEADER_VALUE = re.compile(r"'[^'\n]{0,4096}'|\"[^\"\n]{0,4096}\"|[^\n,}]{1,4096}")
_URL_PASSWORD = re.compile(r"(?P<lead>://[^/\s:@]{1,200}:)[^/\s@]{1,1000}(?=@)")


def redact_log_text(text: str) -> str:
    """`text` (a log line) as `redact_url` leaves it, with the values of headers or
    quoted keys with a secret name, and URL passwords, withheld too."""
    text = _URL_PASSWORD.sub(rf"\g<lead>{REDACTED}", redact_url(text))
    parts: list[str] = []
    done = 0
    for match in _HEADER_NAME.finditer(text):
        if match.start() < done or not is_secret_key(match.group("name")):
            continue
        value = _HEADER_VALUE.match(text, match.end())
        if value is None:
            continue
        quote = value.group(0)[0] if value.group(0)[:1] in ("'", '"') else ""
        parts += [text[done : match.end()], f"{quote}{REDACTED}{quote}"]
        done = value.end()
    return "".join([*parts, text[done:]])


class RedactingLogFilter(logging.Filter):
    """Logging filter: redacts credential-shaped text, secret query parameters, secret
    headers and URL passwords in the formatted message (access log lines included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact_log_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def redact_value(value: Any) -> Any:
    """`redact` for containers and strings; any other value as it is."""
    if isinstance(value, str | Mapping | list | tuple):
        return redact(value)
    return value
