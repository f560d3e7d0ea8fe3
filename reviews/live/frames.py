"""What a push is made of: frames no bigger than daphne sends, and keyed-list inserts."""

from __future__ import annotations

from beamweaver_core.conf import conf

FRAME_BUDGET = conf.websocket_max_message // 2
"""Bytes one pushed frame carries at most (a burst is sent as several frames)."""


def split_frames(parts: list[str]) -> list[str]:
    """`parts` joined into frames of at most `FRAME_BUDGET` bytes each (daphne refuses
    to send a message over its limit); a part bigger than that is a frame of its own."""
    frames: list[str] = []
    size = FRAME_BUDGET
    for part in parts:
        if not part:
            continue
        part_size = len(part.encode())
        if size + part_size > FRAME_BUDGET:
            frames.append("")
            size = 0
        frames[-1] += part
        size += part_size
    return frames


def into_list(list_id: str, html: str) -> str:
    """`html` (elements with ids) as a push into the keyed list `list_id` of a page.

    Rows and run events are pushed into their list, which is always on the page, never at
    the row or event itself, which the page may lack (htmx logs `htmx:oobErrorNoTarget`
    for a fragment without a target). The page's script
    (`reviews/static/beamweaver/js/beamweaver.js`) makes the list keyed: an element whose
    id the page already has replaces that element (a replayed event, a changed row), and a
    `data-remove` marker removes it."""
    return f'<div hx-swap-oob="beforeend:#{list_id}">{html}</div>'
