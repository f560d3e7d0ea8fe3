"""How fast each user may open live sockets: `BEAMWEAVER["RATE_SOCKETS"]` handshakes per
window (default 60 per 30 seconds), counted by `beamweaver_core.ratelimit.hit`.

`reviews.live.slots` bounds how many sockets a user holds at once, not how fast they open
and close them, and each handshake's check (`LiveConsumer.check_handshake`) is work on the
process's one database thread: a client reconnecting in a loop queued one check after
another, without bound. A handshake is counted before that check and before `slots`, so
one past the limit is refused (`reviews.live.base.CLOSE_TOO_FAST`) without a query or a
slot of its own. (The auth middleware has read the session and its user by then, as it
does for every handshake, before any consumer runs.)

Counted per user, as the handshake's session names them, never per client address:

- What the count saves is the user's check. A handshake without a user runs no query in
  the consumer (its check refuses it first, `reviews.live.session.Recheck`), so counting
  those per address would save nothing here; what a flood of them costs (the auth
  middleware's session read) comes before any consumer and is the proxy's to limit.
- One address is often many operators: an office behind one NAT, or every client when the
  server sits behind a proxy that does not pass the real address on. A count per address
  would let one of them shut the others out.
- One account from many addresses is still one count.

The default lets every socket a user may hold (`LIVE_SOCKETS_PER_USER`, 50) come back at
once, as after a server restart, with room for page loads besides; a tab's own
reconnects back off (`reviews/static/beamweaver/js/beamweaver.js` and htmx's ws
extension). A script is held to 60 checks per 30 s, two a second.

Counted in the default cache like the other limits: with Redis, one count for all web
processes (`slots` counts per process). The cache is asked from a worker thread, neither
on the event loop (a Redis that does not answer would stall every socket of the process
for its timeout) nor on the database thread (where Django's async cache methods run it). A
cache that fails refuses nobody: `hit` logs it and skips the limit.
"""

from __future__ import annotations

from collections.abc import Hashable

from asgiref.sync import sync_to_async

from beamweaver_core import ratelimit

SCOPE = "live-socket"
"""The counter's name in the cache (and in the warning of a cache that failed)."""


async def too_soon(user: Hashable) -> int | None:
    """Count one handshake of `user` (a user's primary key): None if it is within
    `RATE_SOCKETS`, else the seconds left in the window (at least 1)."""
    limit = ratelimit.configured("RATE_SOCKETS")
    return await sync_to_async(ratelimit.hit, thread_sensitive=False)(SCOPE, str(user), limit)
