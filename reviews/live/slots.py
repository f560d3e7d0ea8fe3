"""The live sockets each user holds open in this process, bounded by
`BEAMWEAVER["LIVE_SOCKETS_PER_USER"]`.

Counted per process, in memory: a count dies with its process, so a killed or crashed
server leaves nothing behind to expire, and nothing is asked of Redis or Postgres before
a socket is refused. A count shared by every process would need a heartbeat per socket
and an expiry to forget the sockets of a process that died, and while Redis is down it
would refuse everyone or no one. With N web processes a user can hold up to N times the
limit, which still bounds what one account costs each process.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Hashable

from reviews.conf import conf

_held: Counter[Hashable] = Counter()
# Consumers run on the process's event loop; the lock keeps the count right for any
# other loop in the process (tests run consumers on loops of their own).
_lock = threading.Lock()


def take(user: Hashable) -> bool:
    """Count one more socket for `user` (a user's primary key), unless they hold the
    limit already: then nothing is counted and the answer is False."""
    with _lock:
        if _held[user] >= conf.live_sockets_per_user:
            return False
        _held[user] += 1
        return True


def give_back(user: Hashable) -> None:
    """One socket of `user` counted by `take` has ended."""
    with _lock:
        _held[user] -= 1
        if _held[user] <= 0:
            del _held[user]


def held(user: Hashable) -> int:
    """How many sockets `user` holds open in this process."""
    with _lock:
        return _held[user]
