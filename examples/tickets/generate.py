"""Generate the example support-ticket set: seeded, realistic, and awkward on purpose.

The data set is what evalkit's walkthrough splits and scores. It has the shapes
that break naive splitters and scorers:

* tickets come in **conversation threads** of skewed sizes (1 to 30 tickets):
  follow-ups quote the same order and repeat phrases, so a row split leaks;
* ~8 categories with a **long tail**, two of them rare (``legal_threat``,
  ``fraud_report``) and living in a handful of short threads;
* a priority, a **nullable** ``order_id`` and a nullable refund ``amount``;
* texts from one line to several paragraphs.

Run ``python examples/tickets/generate.py`` to rewrite ``tickets.jsonl``; the
same ``--seed`` and ``--n`` always give the same bytes. ``--plant --out FILE``
writes the same tickets with planted defects for error analysis (see
:func:`plant`): flipped labels and a repeated template.

The same tickets also come as **training conversations**, the shape chat
fine-tuning files have: ``--format messages`` writes ``tickets_chat.jsonl``
(OpenAI/TRL ``messages``: a system prompt shared by every example, the ticket
as the user turn, the JSON answer as the assistant turn), ``--format
sharegpt`` the same in ShareGPT's ``conversations`` (``{from, value}``). The
ids, thread ids and categories stay beside the conversation, as metadata
columns for ``--group`` and ``--stratify``.

``--format calls`` writes the **first move** of every ticket as a function-calling
example (``tickets_calls.jsonl``; the walkthrough writes it under demo-out/): the
reference answer is the assistant's tool calls - ``lookup_order`` for a ticket that
names an order (with ``refund_status`` or ``track_parcel`` in parallel for money or
parcel matters), ``escalate_to_legal`` (a rare tool) for a legal threat - or, when no
tool applies, the JSON answer; scored with ``contracts/ticket-tool-calls.yaml``.

``--format tools`` writes ``tickets_tools.jsonl``, the **function-calling**
form (OpenAI's fine-tuning files with tools): every ticket that names an
order, where the assistant first calls ``lookup_order`` (and, for money
matters, ``refund_status`` or, for parcels, ``track_parcel`` in the same
turn), each tool answers with JSON, and the assistant then answers in the
JSON of the other files. Some call turns carry text beside the call, a few
are marked ``weight: 0`` (not trained on), and each row's ``tools`` column
lists the functions it may call (the schemas differ between rows). Its
extra randomness comes from its own generator, so the other files do not
change.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

# (category, share of threads, thread size range or None for the skewed default)
CATEGORIES: list[tuple[str, float, tuple[int, int] | None]] = [
    ("billing", 0.22, None),
    ("shipping", 0.19, None),
    ("account", 0.15, None),
    ("technical", 0.13, None),
    ("returns", 0.11, None),
    ("product_question", 0.12, None),
    ("legal_threat", 0.04, (1, 3)),
    ("fraud_report", 0.04, (1, 4)),
]
ORDER_CATEGORIES = {"billing", "shipping", "returns", "fraud_report"}
AMOUNT_CATEGORIES = {"billing", "returns", "fraud_report"}
PRIORITY_WEIGHTS: dict[str, list[tuple[str, float]]] = {
    "default": [("low", 0.3), ("normal", 0.5), ("high", 0.17), ("urgent", 0.03)],
    "legal_threat": [("high", 0.4), ("urgent", 0.6)],
    "fraud_report": [("high", 0.5), ("urgent", 0.5)],
    "technical": [("low", 0.15), ("normal", 0.45), ("high", 0.3), ("urgent", 0.1)],
}
PRODUCTS = [
    "wireless headphones",
    "standing desk",
    "coffee grinder",
    "running shoes",
    "smart thermostat",
    "backpack",
    "phone case",
    "air purifier",
    "mechanical keyboard",
    "yoga mat",
]
OPENINGS = ["Hi,", "Hello,", "Hi there,", "Good morning,", "Dear support team,", ""]
CLOSINGS = ["Thanks.", "Thank you!", "Regards.", "Please advise.", "Cheers.", ""]
SENTENCES: dict[str, list[str]] = {
    "billing": [
        "I was charged twice for order {order}.",
        "My card shows a charge of ${amount} that I do not recognise.",
        "The invoice for {order} lists the wrong VAT number.",
        "I need a refund of ${amount} for the duplicate payment.",
        "Why was my subscription renewed at a higher price?",
        "The discount code was not applied at checkout and I paid ${amount} too much.",
    ],
    "shipping": [
        "My order {order} has not arrived yet.",
        "The tracking page for {order} has not updated in {days} days.",
        "The parcel was delivered to the wrong address.",
        "Can you ship the {product} to a different address?",
        "The courier says the package was returned to sender.",
        "Delivery was promised within 3 days but it has been {days}.",
    ],
    "account": [
        "I cannot log in to my account since yesterday.",
        "Please change the email address on my account.",
        "I never received the password reset email.",
        "How do I delete my account and all my data?",
        "My account was locked after too many attempts.",
        "Two-factor authentication codes are not arriving by SMS.",
    ],
    "technical": [
        "The app crashes when I open the order history.",
        "The {product} does not connect to the companion app.",
        "After the latest firmware update the {product} keeps restarting.",
        "The website shows an error 500 at checkout.",
        "Bluetooth pairing fails with the {product}.",
        "The page is blank on my browser; I tried clearing the cache.",
    ],
    "returns": [
        "I would like to return the {product} from order {order}.",
        "The return label for {order} does not work.",
        "I sent the {product} back {days} days ago and have no refund of ${amount} yet.",
        "The {product} arrived damaged; can I exchange it?",
        "Is the return window 30 days for sale items?",
        "I returned the wrong item by mistake.",
    ],
    "product_question": [
        "Is the {product} compatible with older models?",
        "What is the warranty on the {product}?",
        "Does the {product} come in other colours?",
        "Can the {product} be used outdoors?",
        "When will the {product} be back in stock?",
        "What are the exact dimensions of the {product}?",
    ],
    "legal_threat": [
        "If this is not resolved within {days} days I will contact my lawyer.",
        "I am filing a complaint with the consumer protection agency.",
        "This is a formal notice before legal action regarding order {order}.",
        "My attorney has advised me to pursue this in small claims court.",
    ],
    "fraud_report": [
        "Someone placed order {order} with my card without my consent.",
        "I see a purchase of ${amount} that I did not make; my account may be compromised.",
        "I received a phishing email pretending to be your company.",
        "An unknown device logged in to my account and ordered a {product}.",
    ],
}
FOLLOW_UPS = [
    "Following up on my previous message.",
    "Any update on this?",
    "I am still waiting for an answer.",
    "Adding more details below.",
    "This is my third message about the same problem.",
]


def _weighted(rng: random.Random, pairs: list[tuple[str, float]]) -> str:
    labels, weights = zip(*pairs, strict=True)
    return rng.choices(labels, weights=weights)[0]


def _thread_size(rng: random.Random, bounds: tuple[int, int] | None) -> int:
    if bounds is not None:
        return rng.randint(*bounds)
    sizes = list(range(1, 31))
    weights = [size**-1.3 for size in sizes]
    return rng.choices(sizes, weights=weights)[0]


def _text(rng: random.Random, category: str, slots: dict[str, str], follow_up: bool) -> str:
    count = rng.choices([1, 2, 3, 4, 6, 9], weights=[20, 30, 22, 14, 9, 5])[0]
    pool = SENTENCES[category]
    body = rng.sample(pool, min(count, len(pool)))
    if follow_up:
        body.insert(0, rng.choice(FOLLOW_UPS))
    parts = [rng.choice(OPENINGS), " ".join(body).format(**slots), rng.choice(CLOSINGS)]
    return " ".join(part for part in parts if part)


def generate(n_tickets: int = 1200, seed: int = 7) -> list[dict[str, object]]:
    """Return ``n_tickets`` ticket records in conversation threads, reproducibly."""
    rng = random.Random(seed)
    names = [name for name, _, _ in CATEGORIES]
    shares = [share for _, share, _ in CATEGORIES]
    bounds = {name: size for name, _, size in CATEGORIES}
    tickets: list[dict[str, object]] = []
    thread = 0
    while len(tickets) < n_tickets:
        thread += 1
        main = rng.choices(names, weights=shares)[0]
        size = min(_thread_size(rng, bounds[main]), n_tickets - len(tickets))
        order = f"ORD-{rng.randint(100000, 999999)}" if main in ORDER_CATEGORIES else None
        product = rng.choice(PRODUCTS)
        for position in range(size):
            # Threads drift: a long thread about shipping may turn into a return.
            category = main
            if (
                position > 0
                and rng.random() < 0.12
                and main not in {"legal_threat", "fraud_report"}
            ):
                category = rng.choice(names[:6])
            amount = None
            if category in AMOUNT_CATEGORIES and rng.random() < 0.7:
                amount = round(rng.uniform(5, 400), 2)
            has_order = category in ORDER_CATEGORIES and order is not None and rng.random() < 0.8
            slots = {
                "order": order or "my last order",
                "amount": f"{amount:.2f}" if amount is not None else "some money",
                "product": product,
                "days": str(rng.randint(2, 21)),
            }
            weights = PRIORITY_WEIGHTS.get(category, PRIORITY_WEIGHTS["default"])
            tickets.append(
                {
                    "ticket_id": f"T{len(tickets) + 1:05d}",
                    "conversation_id": f"C{thread:04d}",
                    "category": category,
                    "priority": _weighted(rng, weights),
                    "order_id": order if has_order else None,
                    "amount": amount,
                    "text": _text(rng, category, slots, follow_up=position > 0),
                }
            )
    return tickets


# --plant: the defects that error analysis finds, for the walkthrough's second part.
PLANTED_FLIPS = 20
PLANTED_TEMPLATE = 60
TEMPLATE = (
    "This is an automated message from the order status form on our website. A customer "
    "has submitted a request about order {order} and would like to know where the parcel "
    "is and when it will arrive. Please look up the shipment and answer the customer "
    "directly. Do not reply to this address, it is not monitored."
)


def plant(tickets: list[dict[str, object]], seed: int = 7) -> list[dict[str, object]]:
    """The tickets with planted defects: flipped labels and a repeated template.

    * ``PLANTED_FLIPS`` tickets get a wrong ``category`` (another common class),
      as a hurried annotator would give; the true one is kept in
      ``planted_flip`` (null elsewhere), which only the simulated predictions
      read: models answer what the text says. Real data has no such column.
    * ``PLANTED_TEMPLATE`` tickets of one web-form template, differing only in
      the order number, each in a conversation of its own:
      the repetition ``evalkit audit`` reports within a split, and that
      ``evalkit split --near-dup`` keeps in one split.

    The original tickets keep their ids and order; the template's tickets
    follow them. A generator of its own (seeded apart) leaves ``tickets`` as
    they were drawn.
    """
    rng = random.Random(f"{seed}:plant")
    common = [name for name, _, _ in CATEGORIES[:6]]
    flipped = set(rng.sample(range(len(tickets)), PLANTED_FLIPS))
    planted: list[dict[str, object]] = []
    for index, ticket in enumerate(tickets):
        record = {**ticket, "planted_flip": None}
        if index in flipped:
            true = str(ticket["category"])
            record["category"] = rng.choice([c for c in common if c != true])
            record["planted_flip"] = true
        planted.append(record)
    thread = max(int(str(t["conversation_id"])[1:]) for t in tickets)
    for _ in range(PLANTED_TEMPLATE):
        thread += 1
        order = f"ORD-{rng.randint(100000, 999999)}"
        text = TEMPLATE.format(order=order)
        planted.append(
            {
                "ticket_id": f"T{len(planted) + 1:05d}",
                "conversation_id": f"C{thread:04d}",
                "category": "shipping",
                "priority": "normal",
                "order_id": order,
                "amount": None,
                "text": text,
                "planted_flip": None,
            }
        )
    return planted


# One prompt for every example: long enough that, were it compared, every pair
# of tickets would look alike.
SYSTEM_PROMPT = (
    "You are the triage assistant of an online shop's customer support team. Read the "
    "customer's ticket and answer with one JSON object and nothing else: no prose, no code "
    "fences. The object has four keys. category: one of billing, shipping, account, "
    "technical, returns, product_question, legal_threat, fraud_report. priority: one of "
    "low, normal, high, urgent; legal threats and fraud reports are never below high. "
    "order_id: the order number the ticket names (three letters, a dash, six digits, as in "
    "ORD-123456), or null when it names none. amount: the refund or charge amount in "
    "dollars the ticket names, as a number, or null when it names none."
)
ANSWER_KEYS = ("category", "priority", "order_id", "amount")
FORMATS = {
    "flat": "tickets.jsonl",
    "messages": "tickets_chat.jsonl",
    "sharegpt": "tickets_sharegpt.jsonl",
    "tools": "tickets_tools.jsonl",
    "calls": "tickets_calls.jsonl",
}
TOOLS_SYSTEM_PROMPT = (
    SYSTEM_PROMPT + " Before answering, look the order up with the tools you are given."
)


def _function(
    name: str, description: str, properties: dict[str, object], required: list[str]
) -> dict[str, object]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
            },
        },
    }


ORDER_ID = {"type": "string", "description": "The order number, e.g. ORD-123456"}
LOOKUP_ORDER = _function(
    "lookup_order",
    "Look up an order: its status, items and total.",
    {"order_id": ORDER_ID},
    ["order_id"],
)
REFUND_STATUS = _function(
    "refund_status",
    "The refund or charge-back state of an order.",
    {"order_id": ORDER_ID, "include_history": {"type": "boolean"}},
    ["order_id"],
)
TRACK_PARCEL = _function(
    "track_parcel",
    "Where the parcel of an order is, from the carrier.",
    {"order_id": ORDER_ID, "carrier": {"type": "string", "enum": ["dhl", "ups", "post"]}},
    ["order_id", "carrier"],
)
ORDER_STATES = ["processing", "shipped", "delivered", "returned", "cancelled"]
REFUND_STATES = ["none", "requested", "pending", "issued"]
CARRIERS = ["dhl", "ups", "post"]


def _call(
    ticket_id: str, number: int, name: str, arguments: dict[str, object]
) -> dict[str, object]:
    return {
        "id": f"call_{ticket_id}_{number}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


def as_tool_conversation(ticket: dict[str, object], rng: random.Random) -> dict[str, object]:
    """A ticket that names an order as a function-calling conversation (see the module doc)."""
    ticket_id, order = str(ticket["ticket_id"]), str(ticket["order_id"])
    category = str(ticket["category"])
    tools = [LOOKUP_ORDER]
    calls = [_call(ticket_id, 0, "lookup_order", {"order_id": order})]
    answers: list[dict[str, object]] = [
        {
            "order_id": order,
            "status": rng.choice(ORDER_STATES),
            "items": [rng.choice(PRODUCTS)],
            "total": round(rng.uniform(10, 500), 2),
        }
    ]
    if category in AMOUNT_CATEGORIES:
        tools.append(REFUND_STATUS)
        if rng.random() < 0.6:
            calls.append(_call(ticket_id, 1, "refund_status", {"order_id": order}))
            answers.append({"order_id": order, "refund": rng.choice(REFUND_STATES)})
    elif category == "shipping":
        tools.append(TRACK_PARCEL)
        if rng.random() < 0.5:
            carrier = rng.choice(CARRIERS)
            calls.append(
                _call(ticket_id, 1, "track_parcel", {"order_id": order, "carrier": carrier})
            )
            scan = f"{carrier} hub, day {rng.randint(1, 9)}"
            answers.append({"order_id": order, "last_scan": scan})
    text = f"Let me look up {order} first." if rng.random() < 0.4 else None
    call_turn: dict[str, object] = {"role": "assistant", "content": text, "tool_calls": calls}
    if rng.random() < 0.06:
        call_turn["weight"] = 0  # the lookup is not trained on for these examples
    answer = json.dumps({key: ticket[key] for key in ANSWER_KEYS}, ensure_ascii=False)
    messages = [
        {"role": "system", "content": TOOLS_SYSTEM_PROMPT},
        {"role": "user", "content": str(ticket["text"])},
        call_turn,
        *(
            {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            for call, result in zip(calls, answers, strict=True)
        ),
        {"role": "assistant", "content": answer},
    ]
    meta = {key: ticket[key] for key in ("ticket_id", "conversation_id", "category")}
    return {**meta, "messages": messages, "tools": tools}


def tool_conversations(tickets: list[dict[str, object]], seed: int) -> list[dict[str, object]]:
    """The tickets that name an order, as function-calling conversations (own generator)."""
    rng = random.Random(f"tools-{seed}")
    return [as_tool_conversation(t, rng) for t in tickets if t["order_id"] is not None]


CALLS_SYSTEM_PROMPT = (
    "You are the triage assistant of an online shop's customer support team. When the "
    "ticket names an order, look it up (and, in the same turn, check its refund for money "
    "matters or track its parcel for deliveries); when it threatens legal action, escalate "
    "it to the legal team with its priority (high or urgent). Otherwise answer with one JSON "
    "object: category, priority, order_id (null) and amount (null or a number)."
)
TRACK_PARCEL_BY_ORDER = _function(
    "track_parcel",
    "Where the parcel of an order is, from the carrier.",
    {"order_id": ORDER_ID, "carrier": {"type": "string", "enum": ["dhl", "ups", "post"]}},
    ["order_id"],
)
ESCALATE_TO_LEGAL: dict[str, object] = {
    "type": "function",
    "function": {
        "name": "escalate_to_legal",
        "description": "Hand a ticket that threatens legal action to the legal team.",
        "parameters": {
            "type": "object",
            "properties": {"priority": {"type": "string", "enum": ["high", "urgent"]}},
            "required": ["priority"],
            "additionalProperties": False,
        },
    },
}
CALL_TOOLS = [LOOKUP_ORDER, REFUND_STATUS, TRACK_PARCEL_BY_ORDER, ESCALATE_TO_LEGAL]


def reference_calls(ticket: dict[str, object], rng: random.Random) -> list[tuple[str, dict]]:
    """The calls the assistant should make first for a ticket (none: it answers in text)."""
    category, order = str(ticket["category"]), ticket["order_id"]
    if category == "legal_threat":
        return [("escalate_to_legal", {"priority": ticket["priority"]})]
    if order is None:
        return []
    calls: list[tuple[str, dict]] = [("lookup_order", {"order_id": order})]
    if category in AMOUNT_CATEGORIES and rng.random() < 0.6:
        calls.append(("refund_status", {"order_id": order}))
    elif category == "shipping" and rng.random() < 0.5:
        calls.append(("track_parcel", {"order_id": order}))
    return calls


def as_call_conversation(ticket: dict[str, object], rng: random.Random) -> dict[str, object]:
    """A ticket whose reference answer is the assistant's first move: its tool calls, or
    the JSON answer when no tool applies (``--format calls``)."""
    ticket_id = str(ticket["ticket_id"])
    calls = reference_calls(ticket, rng)
    if calls:
        made = [_call(ticket_id, number, name, args) for number, (name, args) in enumerate(calls)]
        text = "Let me look that up." if rng.random() < 0.3 else None
        reference: dict[str, object] = {"role": "assistant", "content": text, "tool_calls": made}
    else:
        answer = json.dumps({key: ticket[key] for key in ANSWER_KEYS}, ensure_ascii=False)
        reference = {"role": "assistant", "content": answer}
    messages = [
        {"role": "system", "content": CALLS_SYSTEM_PROMPT},
        {"role": "user", "content": str(ticket["text"])},
        reference,
    ]
    meta = {key: ticket[key] for key in ("ticket_id", "conversation_id", "category")}
    return {**meta, "messages": messages, "tools": CALL_TOOLS}


def call_conversations(tickets: list[dict[str, object]], seed: int) -> list[dict[str, object]]:
    """Every ticket as a first-move conversation (own generator: the other files do not change)."""
    rng = random.Random(f"calls-{seed}")
    return [as_call_conversation(t, rng) for t in tickets]


def as_conversation(ticket: dict[str, object], shape: str = "messages") -> dict[str, object]:
    """A ticket as a training example: system prompt, ticket, JSON answer.

    ``shape`` is ``messages`` (``{role, content}``) or ``sharegpt`` (``{from, value}``).
    """
    answer = json.dumps({key: ticket[key] for key in ANSWER_KEYS}, ensure_ascii=False)
    turns = [("system", SYSTEM_PROMPT), ("user", str(ticket["text"])), ("assistant", answer)]
    meta = {key: ticket[key] for key in ("ticket_id", "conversation_id", "category")}
    if shape == "sharegpt":
        names = {"system": "system", "user": "human", "assistant": "gpt"}
        return {**meta, "conversations": [{"from": names[r], "value": c} for r, c in turns]}
    return {**meta, "messages": [{"role": role, "content": content} for role, content in turns]}


def main() -> None:
    """Write the ticket set as JSONL: flat columns, or conversations."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1200, help="number of tickets (default 1200)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default="flat",
        help="flat columns (default), or conversations: messages, sharegpt, tools "
        "(function calling: the tickets that name an order) or calls (every ticket, the "
        "reference answer being the first move: tool calls, or the JSON answer)",
    )
    parser.add_argument("--out", type=Path, help="output file (default: beside this script)")
    parser.add_argument(
        "--plant",
        action="store_true",
        help="plant flipped labels and a repeated template (flat format; needs --out)",
    )
    args = parser.parse_args()
    if args.plant and (args.out is None or args.format != "flat"):
        parser.error("--plant writes the flat format to a file of its own: give --out FILE")
    out = args.out or Path(__file__).with_name(FORMATS[args.format])
    tickets = generate(args.n, args.seed)
    if args.plant:
        tickets = plant(tickets, args.seed)
    if args.format == "flat":
        records = tickets
    elif args.format == "tools":
        records = tool_conversations(tickets, args.seed)
    elif args.format == "calls":
        records = call_conversations(tickets, args.seed)
    else:
        records = [as_conversation(t, args.format) for t in tickets]
    lines = [json.dumps(record, ensure_ascii=False) for record in records]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} tickets to {out}")


if __name__ == "__main__":
    main()
