"""The demo's back office: orders, support records and an outbox, kept in memory.

Every side effect goes through `OpsStore.once(key, action)`, which runs `action` at most
once per idempotency key and returns the first result to later callers, so a tool step
that runs again (after a crash, or a resumed review) never refunds or emails twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

_T = TypeVar("_T")

ADMIN_EMAIL = "admin@example.com"
OPS_EMAIL = "ops-team@example.com"


@dataclass
class Order:
    """A customer order that can be refunded up to its total."""

    id: str
    customer: str
    email: str
    total: float
    status: str
    refunded: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """What `lookup_order` returns."""
        return {
            "order_id": self.id,
            "customer": self.customer,
            "email": self.email,
            "total": self.total,
            "status": self.status,
            "refunded": self.refunded,
        }


@dataclass
class Record:
    """A support record; `created_at` drives the retention clean-ups."""

    id: str
    customer: str
    subject: str
    status: str
    created_at: datetime

    def age_days(self, now: datetime) -> int:
        """Whole days since the record was created."""
        return (now - self.created_at).days

    def to_dict(self, now: datetime) -> dict[str, Any]:
        """What `search_records` returns for the record."""
        return {
            "record_id": self.id,
            "customer": self.customer,
            "subject": self.subject,
            "status": self.status,
            "age_days": self.age_days(now),
        }


_ORDERS = [
    ("1234", "Dana Whitfield", "dana@example.com", 480.00, "delivered"),
    ("1235", "Omar Haddad", "omar@example.com", 89.90, "delivered"),
    ("1236", "Priya Raman", "priya@example.com", 1299.00, "shipped"),
    ("2001", "Lena Vogel", "lena@example.com", 45.50, "delivered"),
    ("2002", "Tom Okafor", "tom@example.com", 260.00, "returned"),
]
_RECORDS = [
    ("R-101", "Dana Whitfield", "Package arrived damaged", "closed", 95),
    ("R-102", "Omar Haddad", "Change shipping address", "closed", 64),
    ("R-103", "Lena Vogel", "Invoice copy requested", "archived", 41),
    ("R-104", "Tom Okafor", "Return label not received", "closed", 33),
    ("R-105", "Priya Raman", "Order status question", "open", 12),
    ("R-106", "Dana Whitfield", "Refund timing question", "open", 5),
    ("R-107", "Omar Haddad", "Promo code did not apply", "closed", 180),
    ("R-108", "Lena Vogel", "Account email change", "archived", 2),
]


@dataclass
class OpsStore:
    """Orders, support records and sent emails, safe to use from several threads."""

    orders: dict[str, Order] = field(default_factory=dict)
    records: dict[str, Record] = field(default_factory=dict)
    outbox: list[dict[str, Any]] = field(default_factory=list)
    ledger: dict[str, Any] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    @classmethod
    def with_fixtures(cls, now: datetime | None = None) -> OpsStore:
        """A store filled with the demo's orders and records (ages relative to `now`)."""
        now = now or datetime.now(UTC)
        store = cls()
        for order_id, customer, email, total, status in _ORDERS:
            store.orders[order_id] = Order(order_id, customer, email, total, status)
        for record_id, customer, subject, status, age in _RECORDS:
            created = now - timedelta(days=age)
            store.records[record_id] = Record(record_id, customer, subject, status, created)
        return store

    def once(self, key: str, action: Callable[[], _T]) -> _T:
        """Run `action` unless `key` already ran; either way return the first result."""
        with self.lock:
            if key not in self.ledger:
                self.ledger[key] = action()
            result: _T = self.ledger[key]
            return result

    def matching_records(
        self, older_than_days: int | None, status: str | None, query: str = ""
    ) -> list[Record]:
        """Records older than `older_than_days` with `status` whose text mentions `query`."""
        now = datetime.now(UTC)
        needle = query.lower()
        with self.lock:
            return [
                r
                for r in self.records.values()
                if (older_than_days is None or r.age_days(now) > older_than_days)
                and (status is None or r.status == status)
                and (not needle or needle in f"{r.customer} {r.subject}".lower())
            ]


STORE = OpsStore.with_fixtures()
"""The process-wide store the demo tools act on."""


__all__ = ["ADMIN_EMAIL", "OPS_EMAIL", "STORE", "OpsStore", "Order", "Record"]
