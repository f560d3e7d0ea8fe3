"""Django's ASGI handler, with a request's middleware and view run in one trip to its thread.

Django's `ASGIHandler` loads the middleware chain in asynchronous mode. Django's own
middleware (and this project's) is synchronous, so each of its hooks is a separate trip
from the event loop to the request's thread and back (`sync_to_async`), and so are each
`process_view` and a synchronous view: eleven wake-ups of the event loop by a thread for one
request to a synchronous view. `OneTripASGIHandler` loads the chain in synchronous mode, as
Django's WSGI handler does, and runs it in one trip: the middleware, the view middleware and
the view, in the request's thread (four wake-ups, the rest being Django's `request_started`
and `request_finished`). A coroutine view (the protocol's streams and waits) is run from
that thread on the event loop (`async_to_sync`, as Django runs one under WSGI), its own
trips to a database thread coming back to the request's thread; a client's disconnect
still cancels it (asgiref cancels the coroutine behind a cancelled trip).

Hand-written: Django has no setting for this, and no maintained package provides it; the
handler only loads Django's own chain in Django's other mode.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler


class OneTripASGIHandler(ASGIHandler):
    """`ASGIHandler` running a request's middleware chain and view in one trip to its
    thread."""

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        # django-stubs leaves the chain's type undetermined (`None` until loaded).
        chain = self._middleware_chain  # type: ignore[has-type]
        self._middleware_chain = sync_to_async(chain, thread_sensitive=True)


def get_asgi_application() -> OneTripASGIHandler:
    """Django's `get_asgi_application` with `OneTripASGIHandler`: sets Django up first."""
    import django

    django.setup(set_prefix=False)
    return OneTripASGIHandler()


__all__ = ["OneTripASGIHandler", "get_asgi_application"]
