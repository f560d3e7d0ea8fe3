"""Websocket routes of the review inbox: one socket per live page."""

from __future__ import annotations

from django.urls import URLPattern, path, re_path

from reviews.live.inbox import InboxConsumer
from reviews.live.item import ItemConsumer
from reviews.live.thread import ThreadConsumer

# Channels routes ASGI applications with Django's `path`; django-stubs types the route's
# target as a view (request in, response out), hence the three ignores.
websocket_urlpatterns: list[URLPattern] = [
    path("ws/inbox/", InboxConsumer.as_asgi()),  # type: ignore[arg-type]
    path("ws/items/<int:pk>/", ItemConsumer.as_asgi()),  # type: ignore[arg-type]
    re_path(r"^ws/threads/(?P<thread_id>[\s\S]+)/$", ThreadConsumer.as_asgi()),  # type: ignore[arg-type]
]
