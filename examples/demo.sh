#!/usr/bin/env bash
# The ticket-triage walkthrough, run by `make demo`. Each step is one evalkit
# command; outputs go to demo-out/ (recreated on every run).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=demo-out
rm -rf "$OUT"
mkdir -p "$OUT"

echo "== 1. split 1,200 tickets into 840/180/180, conversations kept whole"
evalkit split examples/tickets/tickets.jsonl --out "$OUT/split" \
  --group conversation_id --stratify category --id ticket_id --text text \
  --sizes 840,180,180 --seed 7
