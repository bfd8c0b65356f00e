"""Write a few test tickets as conversations, the shape a chat fine-tune is evaluated on.

Until the walkthrough ships chat-format tickets of its own, this turns rows
of the flat test split (``ticket_id``, ``text``, the gold fields) into
``messages``: a system prompt, the ticket as the user turn, and the
reference JSON answer as the assistant turn. The gold columns stay beside
``messages``, so the file is both what ``evalkit generate`` answers and the
gold ``evalkit score`` reads.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SYSTEM = (
    "Triage the support ticket. Answer with one JSON object: category, priority, "
    "order_id (or null), amount (or null)."
)
ANSWER_KEYS = ("category", "priority", "order_id", "amount")


def conversations(split: Path, out: Path, n: int) -> int:
    """Write the first ``n`` tickets of ``split`` (by id) as conversations; the count."""
    import polars as pl

    frame = pl.read_parquet(split) if split.suffix == ".parquet" else pl.read_ndjson(split)
    rows = frame.sort("ticket_id").head(n).to_dicts()
    lines = []
    for row in rows:
        answer = json.dumps({key: row.get(key) for key in ANSWER_KEYS})
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": row["text"]},
            {"role": "assistant", "content": answer},
        ]
        kept = {key: row.get(key) for key in ("ticket_id", "conversation_id", *ANSWER_KEYS)}
        lines.append(json.dumps({**kept, "messages": messages}))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("split", type=Path, help="the flat test split (parquet or jsonl)")
    parser.add_argument("--out", type=Path, required=True, help="conversations file to write")
    parser.add_argument("--n", type=int, default=12, help="how many tickets (default 12)")
    args = parser.parse_args()
    count = conversations(args.split, args.out, args.n)
    print(f"wrote {count} conversations to {args.out}")


if __name__ == "__main__":
    main()
