"""Websocket routes of the review inbox: one socket per live page."""

from __future__ import annotations

from typing import Any

from django.urls import path, re_path

from reviews.live.inbox import InboxConsumer
from reviews.live.item import ItemConsumer
from reviews.live.thread import ThreadConsumer

websocket_urlpatterns: list[Any] = [
    path("ws/inbox/", InboxConsumer.as_asgi()),
    path("ws/items/<int:pk>/", ItemConsumer.as_asgi()),
    re_path(r"^ws/threads/(?P<thread_id>[\s\S]+)/$", ThreadConsumer.as_asgi()),
]
