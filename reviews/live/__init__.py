"""Live pages over one websocket each: the inbox, a review item, a thread.

A consumer (`reviews.live.inbox`, `.item`, `.thread`) refuses the handshake (closes before accepting)
unless the session's user may review and may see what the page shows, and joins only the
groups of that page. A user holds at most `BEAMWEAVER["LIVE_SOCKETS_PER_USER"]` sockets
open in a process (`reviews.live.slots`); the next is closed with 4429. A user opens at
most `BEAMWEAVER["RATE_SOCKETS"]` per window (`reviews.live.handshakes`); the next is
closed with 4430 before its check. Messages from the channel layer are hints: they are
noted on the event loop, and the next round (`reviews.live.rounds`) re-checks every
socket with notes (`reviews.live.session`), renders what they noted once per view
(every socket that may see the same thing gets the same bytes: the LiveView idea) with
the template partials the HTTP views render, and sends them as htmx out-of-band swaps on
stable element ids (`reviews.live.frames`). On every (re)connect a page gets its live
parts again, so a page that missed hints catches up.

Clients send nothing that changes state: the only frame read is a presence ping
(`{"type": "presence.ping"}`), handled at most once per `base.PING_SECONDS` per socket;
every other frame is ignored on the event loop (`LiveConsumer.receive`), and decisions
are HTTP only. Handshakes with a NUL or on a path no page has are denied before they
reach a consumer (`beamweaver_core.nul_guard`, `beamweaver_core.embed.asgi`).
"""
