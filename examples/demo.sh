#!/usr/bin/env bash
# The ticket-triage walkthrough, run by `make demo`. Each step is one evalkit
# command; outputs go to demo-out/ (recreated on every run).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=demo-out
rm -rf "$OUT"
mkdir -p "$OUT"

echo "######## Before training: the data, the tokens, the GPU ########"
echo
echo "== 1. split 1,200 tickets into 840/180/180, conversations kept whole"
evalkit split examples/tickets/tickets.jsonl --out "$OUT/split-plain" \
  --group conversation_id --stratify category --id ticket_id --text text \
  --sizes 840,180,180 --seed 7

echo
echo "== 1b. audit that split: conversations stayed whole, but re-asked tickets crossed splits"
status=0
evalkit audit "$OUT/split-plain" --id ticket_id --text text --group conversation_id \
  --stratify category --json "$OUT/audit.json" || status=$?
if [ "$status" -ne 1 ]; then
  echo "demo: expected evalkit audit to find leaks (exit 1), got exit $status" >&2
  exit 1
fi
echo "   -> exit 1: leaks found; every pair is in $OUT/audit.json"

echo
echo "== 1c. split again with --near-dup 0.8 (duplicate clusters kept whole) and audit: clean"
echo "   (this is the split the rest of the walkthrough uses: $OUT/split)"
evalkit split examples/tickets/tickets.jsonl --out "$OUT/split" \
  --group conversation_id --stratify category --id ticket_id --text text \
  --sizes 840,180,180 --seed 7 --near-dup 0.8 --quiet
evalkit audit "$OUT/split" --id ticket_id --text text --group conversation_id --quiet
echo "   -> exit 0: no group, id, exact or near-duplicate leak"

echo
echo "== 2. the same tickets as training conversations (system prompt, ticket, JSON answer)"
echo "   (examples/tickets/tickets_chat.jsonl; python examples/tickets/generate.py --format messages)"
evalkit split examples/tickets/tickets_chat.jsonl --out "$OUT/chat-split" \
  --group conversation_id --stratify category --id ticket_id --text messages \
  --sizes 840,180,180 --seed 7 --near-dup 0.8 --format jsonl

echo
echo "== 2b. audit it: the shared system prompt is not compared (default --roles), no leak"
evalkit audit "$OUT/chat-split" --id ticket_id --text messages --group conversation_id
echo "   -> exit 0. Comparing the shared system prompt too (--roles system,user) is wrong:"
status=0
evalkit audit "$OUT/chat-split" --id ticket_id --text messages --roles system,user \
  --json "$OUT/chat-audit-with-system.json" --quiet || status=$?
if [ "$status" -ne 1 ]; then
  echo "demo: expected the audit with the system prompt compared to exit 1, got $status" >&2
  exit 1
fi
python - "$OUT/chat-audit-with-system.json" <<'PY'
import json, sys
counts = json.load(open(sys.argv[1]))["counts"]
print(f"   -> exit 1: {counts['near_duplicates']:,} near-duplicate pairs that only share the prompt")
PY

echo
echo "== 2c. function-calling tickets: the assistant looks the order up with a tool, the tool"
echo "   answers, then the assistant answers in the same JSON (examples/tickets/tickets_tools.jsonl;"
echo "   python examples/tickets/generate.py --format tools). Split files hold the input's lines:"
evalkit split examples/tickets/tickets_tools.jsonl --out "$OUT/tools-split" \
  --group conversation_id --stratify category --id ticket_id --text messages \
  --ratios 0.7,0.15,0.15 --seed 7 --near-dup 0.8 --format jsonl
python - examples/tickets/tickets_tools.jsonl "$OUT/tools-split" <<'PY'
import sys
from pathlib import Path
source = set(Path(sys.argv[1]).read_bytes().splitlines())
split = Path(sys.argv[2])
written = [line for name in ("train", "val", "test")
           for line in (split / f"{name}.jsonl").read_bytes().splitlines()]
same = sum(line in source for line in written)
print(f"   -> {same:,} of {len(written):,} split lines are input lines, byte for byte")
PY
echo "   and its test prompts keep every tool call and tool answer, with the row's tools:"
evalkit prompts "$OUT/tools-split/test.jsonl" --id ticket_id --text messages \
  --out "$OUT/prompts/tools-test.batch.jsonl" --model ticket-triage-ft --max-tokens 200

echo
echo "== 2d. from Python: the tool tickets as a polars frame (which gives every row's tools the"
echo "   other rows' properties as null), split, and handed to TRL's SFTTrainer as to_datasets()"
echo "   gives them: each row's own tools and messages (one training step of the example model)"
OUT="$OUT" python - <<'PYTHON' 2>/dev/null | grep -v train_runtime
import os

import polars as pl
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

import evalkit

tickets = pl.read_ndjson("examples/tickets/tickets_tools.jsonl")  # tools differ by row
split = evalkit.split(tickets, group="conversation_id", stratify="category",
                      id_column="ticket_id", text="messages", ratios=[0.8, 0.1, 0.1])
ds = split.to_datasets()  # a DatasetDict: train, validation, test
trainer = SFTTrainer(
    model=AutoModelForCausalLM.from_pretrained("examples/model/base"),
    processing_class=AutoTokenizer.from_pretrained("examples/tokenizer-tools"),
    train_dataset=ds["train"].select(range(8)),
    eval_dataset=ds["validation"].select(range(4)),
    args=SFTConfig(output_dir=os.path.join(os.environ["OUT"], "sft-out"), max_steps=1,
                   per_device_train_batch_size=4, max_length=1024, report_to="none",
                   use_cpu=True),
)
trainer.train()
print(split.manifest.input.padded_rows, "rows carried padding, read as absent;",
      trainer.state.global_step, "training step on", {k: len(v) for k, v in ds.items()})
PYTHON

echo
echo "== 3. the chat split as the model will see it: rendered by the example tokenizer's chat"
echo "   template (examples/tokenizer), loss on the assistant turns, checked at 512 tokens"
evalkit tokens "$OUT/chat-split" --tokenizer examples/tokenizer --text messages --id ticket_id \
  --seq-len 512 --json "$OUT/tokens/report.json" --html "$OUT/tokens/report.html"
echo "   -> exit 0. A planted defect: the same tokenizer with <|endoftext|> as its eos, so"
echo "   generation stops on a token no assistant turn ends with (they end with <|im_end|>):"
python - examples/tokenizer "$OUT/tokenizer-wrong-eos" <<'PY'
import json, shutil, sys
shutil.copytree(sys.argv[1], sys.argv[2], ignore=shutil.ignore_patterns("*.py"))
config_path = f"{sys.argv[2]}/tokenizer_config.json"
config = json.load(open(config_path))
config["eos_token"] = "<|endoftext|>"
json.dump(config, open(config_path, "w"), indent=2)
PY
status=0
evalkit tokens "$OUT/chat-split/train.jsonl" --tokenizer "$OUT/tokenizer-wrong-eos" \
  --text messages --id ticket_id || status=$?
if [ "$status" -ne 1 ]; then
  echo "demo: expected evalkit tokens to fail the planted stop token with exit 1, got $status" >&2
  exit 1
fi
echo "   -> exit 1: stop_token fails on every example (and pad_is_eos warns: pad is now the eos)"

echo
echo "== 3b. the function-calling split as the model will see it: tools, tool calls and tool"
echo "   answers rendered by a tool-capable ChatML template (examples/tokenizer-tools: the same"
echo "   tokenizer), loss on every assistant turn, calls included, but those marked weight: 0"
evalkit tokens "$OUT/tools-split" --tokenizer examples/tokenizer-tools --text messages \
  --id ticket_id --seq-len 1536 --json "$OUT/tokens/tools-report.json"
python - "$OUT/tools-split" "$OUT/tokens/tools-report.json" <<'PY'
import json, sys
from pathlib import Path
from transformers import AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained("examples/tokenizer-tools")
report = json.load(open(sys.argv[2]))["splits"]
rows = [json.loads(line) for name in ("train", "val", "test")
        for line in (Path(sys.argv[1]) / f"{name}.jsonl").read_text().splitlines()]
def with_objects(message):  # as evalkit hands a call's JSON-object arguments: the object
    calls = [{**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
             for c in message.get("tool_calls") or []]
    return {**message, "content": message["content"] or "", **({"tool_calls": calls} if calls else {})}
def total(tools):
    return sum(len(tokenizer.apply_chat_template([with_objects(m) for m in row["messages"]],
                                                 tools=row["tools"] if tools else None,
                                                 tokenize=True, return_dict=False)) for row in rows)
ours = sum(split["total_tokens"] for split in report.values())
print(f"   -> exit 0: {ours:,} tokens; apply_chat_template(messages, tools=tools) gives {total(True):,}"
      f" ({total(False):,} without the tools)")
PY

echo
echo "== 4. before renting a GPU: plan the memory of a QLoRA cycle on Llama-2-13B"
echo "   (examples/plan/llama-2-13b holds its published config.json; no weights are read)"
evalkit plan --config examples/plan/llama-2-13b --method qlora --seq-len 2048 \
  --eval-batch-size 8 --eval-tokens 1024 --export merge --json "$OUT/plan/llama-2-13b-qlora.json"
echo
echo "   the same cycle exporting the adapter alone:"
evalkit plan --config examples/plan/llama-2-13b --method qlora --seq-len 2048 \
  --eval-batch-size 8 --eval-tokens 1024 --export adapter | tail -n 1

echo
echo "   and the hours of a campaign on Llama-2-7B (QLoRA, 2 epochs of 20M tokens, 500"
echo "   evaluations of 256 new tokens, 2 runs + the baseline in a week): lower bounds on the"
echo "   four GPU classes people rent (peak dense bf16 rate and bandwidth from each datasheet)"
evalkit plan --config examples/plan/llama-2-7b --method qlora --seq-len 2048 \
  --train-tokens 20000000 --epochs 2 --eval-examples 500 --eval-new-tokens 256 --eval-tokens 1024 \
  --gpu "RTX 4090" --gpu "A100 SXM 80GB" --gpu "H100 SXM 80GB" --gpu MI300X \
  --runs 2 --window 7d --recovery 0.2 --json "$OUT/plan/llama-2-7b-time.json" | sed -n '/^time:/,$p'

echo
echo "== 5. smoke: 3 real LoRA steps of the example model on the chat split at 512 tokens,"
echo "   each phase measured beside evalkit plan's bound, the adapter reloaded in a fresh process"
echo "   (on the CPU the figures are process RSS: they show the mechanics, not the GPU plan)"
evalkit smoke --base examples/model/base --data "$OUT/chat-split/train.jsonl" --text messages \
  --seq-len 512 --batch-size 2 --json "$OUT/model/smoke.json"
echo "   -> exit 0: finite losses, and the reloaded adapter gives the trained logits"

echo
echo "== 5b. the example model's campaign at the rates smoke just measured (3 epochs of the"
echo "   train split, its tokens from step 3's report; 180 evaluations of 48 new tokens;"
echo "   2 runs in a day, 20% kept for reruns, at 2.00 an hour). The CPU is none of the"
echo "   table's GPU classes: the hours are its own, nothing is scaled to a GPU"
evalkit plan --config examples/model/base --seq-len 512 --batch-size 2 --eval-tokens 400 \
  --tokens-report "$OUT/tokens/report.json" --epochs 3 --eval-examples 180 --eval-new-tokens 48 \
  --gpu "RTX 4090" --measured "$OUT/model/smoke.json" --runs 2 --window 1d --recovery 0.2 \
  --price-per-hour 2 --json "$OUT/plan/example-campaign.json" | sed -n '/^lower bounds/,$p'

echo
echo "== 5c. checkpoints that resume (preemptible GPUs): transformers' Trainer with PEFT on the"
echo "   example model and the TrainingArguments of examples/model/trainer-args.yaml, each run a"
echo "   fresh process: A straight to step 6, A' again (the noise floor), B killed with SIGKILL"
echo "   right after checkpoint-4 is written and resumed from it (only the resume check is shown)"
evalkit smoke --base examples/model/base --data "$OUT/chat-split/train.jsonl" --text messages \
  --seq-len 512 --batch-size 2 --steps 6 --trainer hf --resume-at 4 \
  --trainer-args examples/model/trainer-args.yaml --json "$OUT/model/smoke-resume.json" \
  | sed -n '/^resume check/,$p'
echo "   -> exit 0: after the resume B is A bit for bit (the CPU in float32); the checkpoint's files,"
echo "      bytes and save seconds are in smoke-resume.json's resume.checkpoint (for evalkit plan)"

echo
echo "######## After training: the adapter, its predictions, the verdict ########"
echo
echo "== 6. what the example adapter is, read from its PEFT folder without torch: evalkit card"
status=0
evalkit card examples/model/adapter --base examples/model/base --json "$OUT/card.json" || status=$?
if [ "$status" -ne 1 ]; then
  echo "demo: expected evalkit card to flag the unpinned base (exit 1), got exit $status" >&2
  exit 1
fi
echo "   -> exit 1: unpinned_base (the adapter names its base by a path, not a pinned commit;"
echo "      --base-revision pins a Hub base, and generate pins a local one by its hashes)"

echo
echo "== 7. generate with a model: a base + LoRA adapter from local folders (examples/model/),"
echo "   on the first 12 test conversations of the chat split (reference answers left out)"
echo "   (the example model is TINY AND RANDOM: its outputs are GARBAGE, and scoring them says"
echo "    so. The point is the mechanics - loading, rendering, batching, pinning, reloading -"
echo "    which are the same for a 7B model and its adapter.)"
mkdir -p "$OUT/model"
head -n 12 "$OUT/chat-split/test.jsonl" > "$OUT/model/test-chat.jsonl"
evalkit generate --base examples/model/base --adapter examples/model/adapter \
  --data "$OUT/model/test-chat.jsonl" --id ticket_id --text messages \
  --out "$OUT/model/run" --max-new-tokens 32 --batch-size 4
head -2 "$OUT/model/run/predictions.jsonl"
echo
evalkit score --contract contracts/ticket-triage-chat.yaml --gold "$OUT/model/test-chat.jsonl" \
  --pred "$OUT/model/run/predictions.jsonl" --card "$OUT/card.json" --out "$OUT/model/score" \
  --name tiny-random-adapter \
  --no-ledger | head -8
echo "   -> every output is no_json: the contract sees garbage as garbage"

echo
echo "== 8. reload-check: a fresh process reloads what run.json pins and regenerates controls"
evalkit reload-check "$OUT/model/run" --n 8

echo
echo "== 8b. merge the adapter into the base: saved in float32 it passes; saved in bf16 it fails"
python examples/model/merge.py --base examples/model/base --adapter examples/model/adapter \
  --out "$OUT/model/merged-fp32"
evalkit reload-check "$OUT/model/run" --n 12 --merged "$OUT/model/merged-fp32" --quiet
echo "   -> exit 0: the fp32 merge gives the scored tokens"
python examples/model/merge.py --base examples/model/base --adapter examples/model/adapter \
  --out "$OUT/model/merged-bf16" --save-dtype bfloat16
status=0
evalkit reload-check "$OUT/model/run" --n 12 --merged "$OUT/model/merged-bf16" \
  --json "$OUT/model/reload-bf16.json" || status=$?
if [ "$status" -ne 1 ]; then
  echo "demo: expected reload-check to fail on the bf16-saved merge (exit 1), got exit $status" >&2
  exit 1
fi
echo "   -> exit 1: the bf16-saved merge is not the artifact that was scored"

echo
echo "== 9. the test split's prompts (reference answers left out) as OpenAI Batch requests"
evalkit prompts "$OUT/chat-split/test.jsonl" --id ticket_id --text messages \
  --out "$OUT/prompts/test.batch.jsonl" --model ticket-triage-ft --max-tokens 200

echo
echo "== 9b. SIMULATED Batch output files for those requests, scored with gold read from"
echo "   the reference answers (contracts/ticket-triage-chat.yaml: gold_answer)"
python examples/tickets/simulate_predictions.py "$OUT/chat-split/test.jsonl" \
  --batch-input "$OUT/prompts/test.batch.jsonl" --out "$OUT/chat-predictions" --seed 11
evalkit score --contract contracts/ticket-triage-chat.yaml --gold "$OUT/chat-split/test.jsonl" \
  --pred "$OUT/chat-predictions/candidate-b.batch-output.jsonl" --pred-format openai-batch \
  --out "$OUT/score-chat/candidate-b" --name candidate-b

echo
echo "== 10. simulate predictions of a baseline and two fine-tuned candidates"
echo "   (SIMULATED: generated from the gold labels with fences, prose, truncations and"
echo "    wrong classes; see examples/tickets/simulate_predictions.py - no model runs here)"
python examples/tickets/simulate_predictions.py "$OUT/split/test.parquet" \
  --out "$OUT/predictions" --seed 11

echo
echo "== 10b. score each against the ticket-triage contract: format and content, per class"
evalkit contract check contracts/ticket-triage.yaml > "$OUT/contract.normalized.yaml"
head -2 "$OUT/contract.normalized.yaml"
for name in baseline candidate-a candidate-b; do
  echo
  evalkit score --contract contracts/ticket-triage.yaml --gold "$OUT/split/test.parquet" \
    --pred "$OUT/predictions/$name.jsonl" --out "$OUT/score/$name" --name "$name"
done

echo
echo "== 11. the test-set ledger: each score above was one look at the test split"
echo "   (score appends to $OUT/split/evalkit-ledger.jsonl; three looks: 'reused')"
evalkit ledger "$OUT/split/test.parquet"

echo
echo "== 12. compare both candidates with the baseline, example by example, and rank them"
echo "   (report.html: the same comparison as charts, one self-contained page to open offline)"
evalkit compare "$OUT/score/baseline" "$OUT/score/candidate-a" "$OUT/score/candidate-b" \
  --out "$OUT/compare"

echo
echo "== 13. gate candidate-a: better on average, but legal_threat is broken -> blocked (exit 1)"
status=0
evalkit gate "$OUT/score/baseline" "$OUT/score/candidate-a" \
  --junit "$OUT/gate/candidate-a.junit.xml" --markdown "$OUT/gate/candidate-a.md" \
  --html "$OUT/gate/candidate-a.html" || status=$?
if [ "$status" -ne 1 ]; then
  echo "demo: expected evalkit gate to block candidate-a with exit 1, got exit $status" >&2
  exit 1
fi
echo "   -> exit $status: candidate-a is blocked; the walkthrough continues"

echo
echo "== 14. gate candidate-b: better on average and no rule broken -> passes (exit 0)"
evalkit gate "$OUT/score/baseline" "$OUT/score/candidate-b" \
  --junit "$OUT/gate/candidate-b.junit.xml" --markdown "$OUT/gate/candidate-b.md"
echo "   -> exit 0: candidate-b passes"
echo
echo "######## Function calling: the right tool, with the right arguments ########"
echo
echo "== 14b. the tickets' first move as function calling: look the order up (refund_status or"
echo "   track_parcel beside it), escalate a legal threat (a rare tool), or answer in text when"
echo "   no tool applies (python examples/tickets/generate.py --format calls); split it, and"
echo "   write its test prompts with the row's tools"
mkdir -p "$OUT/calls"
python examples/tickets/generate.py --format calls --out "$OUT/calls/tickets_calls.jsonl" > /dev/null
evalkit split "$OUT/calls/tickets_calls.jsonl" --out "$OUT/calls/split" --group conversation_id \
  --stratify category --id ticket_id --text messages --ratios 0.7,0.15,0.15 --seed 7 \
  --near-dup 0.8 --format jsonl --quiet > /dev/null
evalkit prompts "$OUT/calls/split/test.jsonl" --id ticket_id --text messages \
  --out "$OUT/calls/test.batch.jsonl" --model ticket-tools-ft --max-tokens 200 --quiet

echo
echo "== 14c. SIMULATED answers: a baseline served through the Batch API (its calls come back"
echo "   structured, message.tool_calls) and two adapters' raw text as evalkit generate writes"
echo "   it (Qwen's <tool_call> blocks), scored with contracts/ticket-tool-calls.yaml: gold is"
echo "   the reference turn's tool calls, the class the called function"
python examples/tickets/simulate_tool_calls.py "$OUT/calls/split/test.jsonl" \
  --batch-input "$OUT/calls/test.batch.jsonl" --out "$OUT/calls/predictions" --seed 11 > /dev/null
evalkit score --contract contracts/ticket-tool-calls.yaml --gold "$OUT/calls/split/test.jsonl" \
  --pred "$OUT/calls/predictions/baseline.batch-output.jsonl" --out "$OUT/calls/score/baseline" \
  --name baseline
for name in candidate-a candidate-b; do
  evalkit score --contract contracts/ticket-tool-calls.yaml --gold "$OUT/calls/split/test.jsonl" \
    --pred "$OUT/calls/predictions/$name.jsonl" --out "$OUT/calls/score/$name" --name "$name" \
    --quiet > /dev/null
done

echo
echo "== 14d. gate candidate-a: better on average, but it stopped calling escalate_to_legal"
status=0
evalkit gate "$OUT/calls/score/baseline" "$OUT/calls/score/candidate-a" \
  --markdown "$OUT/calls/gate-candidate-a.md" || status=$?
if [ "$status" -ne 1 ]; then
  echo "demo: expected evalkit gate to block candidate-a (function calling) with exit 1, got $status" >&2
  exit 1
fi
echo "   -> exit 1: a rare tool the candidate no longer calls is a rare-class regression"

echo
echo "== 14e. gate candidate-b: better, no function, slice or total dropped -> passes (exit 0)"
evalkit gate "$OUT/calls/score/baseline" "$OUT/calls/score/candidate-b"
echo "   -> exit 0: candidate-b passes (function calling)"

echo
echo "######## Error analysis: new rules, suspect labels, repeated phrasings ########"
echo
echo "== 15. contract v2 (contracts/ticket-triage-v2.yaml): a strict parser and a renamed"
echo "   class. Re-score the three results under it, from the predictions they recorded:"
evalkit rescore "$OUT/score/baseline" "$OUT/score/candidate-a" "$OUT/score/candidate-b" \
  --contract contracts/ticket-triage-v2.yaml --out "$OUT/rescore"
echo
echo "   a v1 result against a v2 result is still refused:"
status=0
evalkit compare "$OUT/score/baseline" "$OUT/rescore/candidate-b" 2> "$OUT/refused.txt" \
  || status=$?
if [ "$status" -ne 2 ]; then
  echo "demo: expected compare of v1 against v2 results to be refused (exit 2), got $status" >&2
  exit 1
fi
fold -s -w 100 "$OUT/refused.txt" | sed 's/^/   /'
echo "   -> exit 2; the three v2 results compare:"
evalkit compare "$OUT/rescore/baseline" "$OUT/rescore/candidate-a" "$OUT/rescore/candidate-b" \
  --out "$OUT/compare-v2" | grep -E "^[0-9]\.|^Decision"
echo "   the ledger: the rules changed after the test was seen, so the test set is burned"
evalkit ledger "$OUT/split/test.parquet"

echo
echo "== 16. a copy of the tickets with planted defects: 20 flipped labels and a web-form"
echo "   template repeated 60 times (python examples/tickets/generate.py --plant)"
mkdir -p "$OUT/noisy"
python examples/tickets/generate.py --plant --out "$OUT/noisy/tickets.jsonl" > /dev/null
evalkit split "$OUT/noisy/tickets.jsonl" --out "$OUT/noisy/split" \
  --group conversation_id --stratify category --id ticket_id --text text \
  --ratios 0.7,0.15,0.15 --seed 7 --near-dup 0.8 | grep -E "^repetition|^near"
echo
echo "== 16b. audit it: no leak; the template is 60 items of the training split"
evalkit audit "$OUT/noisy/split" --id ticket_id --text text --group conversation_id \
  --within --json "$OUT/noisy/audit.json" | sed -n '/^repetition/,/^  pairs/p'

echo
echo "== 16c. SIMULATED predictions on its test split (on a flipped item every model answers"
echo "   what the text says), scored, compared: the suspect gold labels"
python examples/tickets/simulate_predictions.py "$OUT/noisy/split/test.parquet" \
  --out "$OUT/noisy/predictions" --seed 11 > /dev/null
for name in baseline candidate-a candidate-b; do
  evalkit score --contract contracts/ticket-triage.yaml --gold "$OUT/noisy/split/test.parquet" \
    --pred "$OUT/noisy/predictions/$name.jsonl" --out "$OUT/noisy/score/$name" --name "$name" \
    --quiet > /dev/null
done
evalkit compare "$OUT/noisy/score/baseline" "$OUT/noisy/score/candidate-a" \
  "$OUT/noisy/score/candidate-b" --out "$OUT/noisy/compare" | grep "^Suspect"
sed -n '/^## Suspect gold labels/,/^_/p' "$OUT/noisy/compare/report.md"

echo
echo "Reports: $OUT/compare/report.html (open it in a browser), $OUT/compare/report.md,"
echo "  $OUT/compare/junit.xml, $OUT/gate/; each score folder has its report.html;"
echo "  $OUT/tokens/report.html shows sampled conversations token by token;"
echo "  $OUT/model/ has the generate run, the reload reports and smoke.json"
