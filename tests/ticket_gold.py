"""Test helper: the gold tickets of the score-then-compare tests, as rows.

Four classes, one of them rare (6 items); billing tickets name an order.
Shared by the tests that score them from files and from frames.
"""

from __future__ import annotations

# (category, count): three common classes and a rare one.
GOLD_CLASSES = [("billing", 30), ("shipping", 30), ("account", 24), ("legal_threat", 6)]


def gold_rows() -> list[dict]:
    rows, number = [], 0
    for category, count in GOLD_CLASSES:
        for _ in range(count):
            number += 1
            rows.append(
                {
                    "ticket_id": f"T{number:04d}",
                    "category": category,
                    "priority": "high" if category == "legal_threat" else "normal",
                    "order_id": f"ORD-{number:06d}" if category == "billing" else None,
                    "amount": None,
                }
            )
    return rows
