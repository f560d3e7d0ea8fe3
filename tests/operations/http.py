"""A small cookie-keeping HTTP client for the live-server tests (the standard library's)."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass


@dataclass
class Page:
    status: int
    url: str
    text: str
    headers: dict[str, str]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


class Browser:
    """Requests with one session's cookies; redirects followed unless `follow=False`."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        cookies = urllib.request.HTTPCookieProcessor(self.jar)
        self._follow = urllib.request.build_opener(cookies)
        self._stay = urllib.request.build_opener(cookies, _NoRedirect())

    def request(
        self,
        path: str,
        data: dict[str, str] | None = None,
        *,
        follow: bool = True,
        headers: dict[str, str] | None = None,
    ) -> Page:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(self.base + path, data=body, headers=headers or {})
        opener = self._follow if follow else self._stay
        try:
            with opener.open(request, timeout=20) as response:
                return Page(
                    response.status, response.url, response.read().decode(), dict(response.headers)
                )
        except urllib.error.HTTPError as error:
            return Page(error.code, error.url, error.read().decode(), dict(error.headers))

    def cookie(self, name: str) -> str:
        return next(c.value for c in self.jar if c.name == name and c.value is not None)

    def log_in(self, path: str, username: str, password: str, *, next_path: str = "") -> Page:
        """Fill the login form at `path` (Django's AuthenticationForm) and send it."""
        form = self.request(path + (f"?next={next_path}" if next_path else ""))
        fields = {"username": username, "password": password, "next": next_path}
        return self.request(path, {**fields, "csrfmiddlewaretoken": csrf_token(form.text)})


def csrf_token(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, "no CSRF token in the page"
    return match.group(1)


def hidden_fields(html: str) -> dict[str, str]:
    """The hidden inputs of a page's forms (the decision form's, for one)."""
    return dict(re.findall(r'<input type="hidden" name="([\w-]+)"[^>]* value="([^"]*)"', html))
