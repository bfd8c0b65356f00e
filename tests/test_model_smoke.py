"""``evalkit smoke`` on the CPU: real steps on a tiny random model, checked against transformers
and peft themselves, the reload in a fresh process, planted failures, every bad input.

References, each computed here the slow and obvious way: the batch from
``apply_chat_template(return_assistant_tokens_mask=True)`` on the same
chat template with ``{% generation %}`` markers; the first step's loss from
``model(input_ids, labels=…).loss`` of a base loaded by transformers (a new
LoRA adapter's B is zero, so before the first update the model is the
base); the trainable count from ``get_nb_trainable_parameters()``; the
bounds from ``evalkit.plan`` with the settings written out by hand.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, assert_one_line_error
from model_fixtures import TinyModels, write_jsonl
from tokens_fixtures import CHATML_MARKED

pytest.importorskip("torch")
pytest.importorskip("peft")

from evalkit.cli import main

pytestmark = pytest.mark.slow  # real optimizer steps on a model

SEQ_LEN, BATCH, STEPS = 64, 3, 3
SCHEMA = ROOT / "docs" / "schemas" / "smoke-report.schema.json"


def _args(tiny: TinyModels, *extra: object) -> list[str]:
    return [str(arg) for arg in ["smoke", "--base", tiny.base, "--data", tiny.data, "--text",
            "messages", "--seq-len", SEQ_LEN, "--batch-size", BATCH, "--steps", STEPS,
            "--device", "cpu", *extra]]  # fmt: skip


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        pytest.raises(SystemExit) as done,
    ):
        main(args)
    code = done.value.code
    return (code if isinstance(code, int) else 0), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def lora_run(tiny: TinyModels, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One LoRA smoke run on the CLI, shared by the tests that read it."""
    path = tmp_path_factory.mktemp("smoke") / "smoke.json"
    code, out, err = _run(_args(tiny, "--json", path))
    return {"code": code, "stdout": out, "stderr": err, "report": json.loads(path.read_text())}


def _rows(tiny: TinyModels) -> list[dict[str, Any]]:
    return [json.loads(line) for line in tiny.data.read_text().splitlines()]


def _marked_tokenizer(tiny: TinyModels) -> Any:
    """The base's tokenizer with the same ChatML template, marked for transformers' mask."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny.base))
    tokenizer.chat_template = CHATML_MARKED
    return tokenizer


def _reference_batch(tiny: TinyModels, rows: list[int]) -> dict[str, Any]:
    """input_ids, attention_mask and labels from transformers' assistant mask, cut and padded."""
    import torch

    tokenizer = _marked_tokenizer(tiny)
    data = _rows(tiny)
    ids, masks, labels = [], [], []
    for row in rows:
        out = tokenizer.apply_chat_template(
            data[row]["messages"], tokenize=True, return_dict=True,
            return_assistant_tokens_mask=True,
        )  # fmt: skip
        tokens = list(out["input_ids"])[:SEQ_LEN]
        mask = list(out["assistant_masks"])[:SEQ_LEN]
        pad = SEQ_LEN - len(tokens)
        ids.append(tokens + [tokenizer.pad_token_id] * pad)
        masks.append([1] * len(tokens) + [0] * pad)
        labels.append([t if m else -100 for t, m in zip(tokens, mask, strict=True)] + [-100] * pad)
    return {name: torch.tensor(value) for name, value in
            (("input_ids", ids), ("attention_mask", masks), ("labels", labels))}  # fmt: skip


def test_a_lora_smoke_run_passes_on_the_cpu(lora_run: dict[str, Any]) -> None:
    import jsonschema

    assert lora_run["code"] == 0, lora_run["stdout"] + lora_run["stderr"]
    out = lora_run["stdout"]
    assert out.rstrip().endswith("smoke: PASS")
    assert "NOT comparable with the plan's GPU bound" in " ".join(out.split())
    assert " RSS " in out
    report = lora_run["report"]
    jsonschema.validate(report, json.loads(SCHEMA.read_text()))
    assert report["verdict"] == "pass" and report["problems"] == []
    assert report["steps"] == STEPS and len(report["losses"]) == STEPS
    assert all(isinstance(loss, float) and loss > 0 for loss in report["losses"])
    assert [len(rows) for rows in report["batches"]] == [BATCH] * STEPS
    assert report["device"]["type"] == "cpu"
    assert report["memory"] == {**report["memory"], "kind": "process_rss", "comparable": False}
    assert set(report["phases"]) == {"load", "train", "eval", "export"}
    for phase in report["phases"].values():
        assert phase["measured_gb"] > 0 and phase["bound_gb"] > 0 and phase["ratio"] is None
    assert report["measured_peak_gb"] == max(p["measured_gb"] for p in report["phases"].values())
    generation = report["generation"]
    assert generation["prompts"] == BATCH and 1 <= generation["new_tokens"] <= 16


def test_smoke_from_python_with_keywords_runs_what_the_command_ran(
    lora_run: dict[str, Any], tiny: TinyModels
) -> None:
    """The command passes one SmokeParams; keywords build the same one, and the same run."""
    from evalkit.model.options import SmokeParams
    from evalkit.model.smoke import smoke

    keywords = {"text": "messages", "seq_len": SEQ_LEN, "batch_size": BATCH, "steps": STEPS}
    report = smoke(tiny.base, tiny.data, device="cpu", **keywords).model_dump(mode="json")
    given = SmokeParams(device="cpu", **keywords)  # type: ignore[arg-type]
    assert given == SmokeParams.build(None, {"device": "cpu", **keywords})
    ran = lora_run["report"]
    for key in ("settings", "plan", "losses", "batches", "targets", "trainable_params"):
        assert report[key] == ran[key], key
    assert report["reload"]["max_logit_diff"] == ran["reload"]["max_logit_diff"]
    assert report["verdict"] == ran["verdict"] == "pass"


def test_rows_without_a_supervised_token_within_seq_len_are_passed_over(
    lora_run: dict[str, Any], tiny: TinyModels
) -> None:
    """Rows whose prompt fills --seq-len would average the loss over nothing."""
    tokenizer = _marked_tokenizer(tiny)
    data = _rows(tiny)
    used = {row for rows in lora_run["report"]["batches"] for row in rows}
    for row in used:
        out = tokenizer.apply_chat_template(
            data[row]["messages"], tokenize=True, return_dict=True,
            return_assistant_tokens_mask=True,
        )  # fmt: skip
        assert any(out["assistant_masks"][1:SEQ_LEN])
    # The fixture has rows of either kind, so the choice is really made.
    assert lora_run["report"]["data"]["skipped_rows"] >= 1


def test_the_batches_and_first_loss_are_transformers_own(
    lora_run: dict[str, Any], tiny: TinyModels
) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    report = lora_run["report"]
    model = AutoModelForCausalLM.from_pretrained(str(tiny.base), dtype=torch.float32).eval()
    for step, rows in enumerate(report["batches"]):
        batch = _reference_batch(tiny, rows)
        assert int((batch["labels"][:, 1:] != -100).sum()) == report["targets"][step]
    first = _reference_batch(tiny, report["batches"][0])
    with torch.no_grad():
        loss = model(**first).loss
    assert report["losses"][0] == pytest.approx(float(loss), rel=1e-5)
    # Training changed the model: a later batch's loss is not the base's.
    second = _reference_batch(tiny, report["batches"][1])
    with torch.no_grad():
        untrained = float(model(**second).loss)
    assert report["losses"][1] != pytest.approx(untrained, rel=1e-6)


def test_the_trainable_count_is_peft_and_the_plans(
    lora_run: dict[str, Any], tiny: TinyModels
) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    report = lora_run["report"]
    model = AutoModelForCausalLM.from_pretrained(str(tiny.base))
    peft_model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    trainable, _ = peft_model.get_nb_trainable_parameters()
    assert report["trainable_params"] == trainable == report["plan"]["trainable_params"]
    assert report["settings"]["targets"] == ["q_proj", "v_proj"] and report["settings"]["r"] == 8


def test_the_bounds_are_the_plan_of_the_settings_that_ran(
    lora_run: dict[str, Any], tiny: TinyModels
) -> None:
    import evalkit

    report = lora_run["report"]
    tokenizer = _marked_tokenizer(tiny)
    data = _rows(tiny)
    prompts = [
        tokenizer.apply_chat_template(data[row]["messages"][:-1], tokenize=True,
                                      add_generation_prompt=True, return_dict=False)
        for row in report["batches"][0]
    ]  # fmt: skip
    expected = evalkit.plan(
        tiny.base, method="lora", r=8, seq_len=SEQ_LEN, batch_size=BATCH, precision="fp32",
        optimizer="adamw-foreach", attention="sdpa", grad_checkpointing=False,
        eval_batch_size=BATCH, eval_tokens=max(len(p) for p in prompts) + 16, export="adapter",
    )  # fmt: skip
    assert report["plan"]["phases"] == expected.phases
    for name, phase in report["phases"].items():
        assert phase["bound_gb"] == expected.phases[name]


# Wall times on a shared machine vary; the rates must agree within this factor, no closer.
RATE_TOLERANCE = 10


def test_the_throughput_is_what_a_timed_loop_measures(
    lora_run: dict[str, Any], tiny: TinyModels
) -> None:
    """The same work timed here with transformers and peft: steps 2-3 and the greedy pass."""
    import time

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    report = lora_run["report"]
    rates = report["throughput"]
    assert rates["device"]["type"] == "cpu" and rates["device_memory_gb"] is None
    assert rates["train_tokens"] == (STEPS - 1) * BATCH * SEQ_LEN
    assert rates["train_tokens_per_second"] == pytest.approx(
        rates["train_tokens"] / rates["train_seconds"], rel=1e-3
    )
    assert rates["eval_tokens_per_second"] == pytest.approx(
        rates["eval_new_tokens"] / rates["eval_seconds"], rel=1e-3
    )
    assert rates["save_seconds"] > 0 and rates["reload_seconds"] > 0
    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(str(tiny.base), dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    model.train()
    seconds = 0.0
    for step, rows in enumerate(report["batches"]):
        batch = _reference_batch(tiny, rows)
        started = time.perf_counter()
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step:  # the first step is the warm-up, as in smoke
            seconds += time.perf_counter() - started
    theirs = (STEPS - 1) * BATCH * SEQ_LEN / seconds
    ratio = rates["train_tokens_per_second"] / theirs
    assert 1 / RATE_TOLERANCE < ratio < RATE_TOLERANCE, (rates, theirs)
    # The greedy pass: the first batch's prompts, left-padded, 16 new tokens at most.
    tokenizer = _marked_tokenizer(tiny)
    tokenizer.padding_side = "left"
    data = _rows(tiny)
    texts = [tokenizer.apply_chat_template(data[row]["messages"][:-1], tokenize=False,
                                           add_generation_prompt=True)
             for row in report["batches"][0]]  # fmt: skip
    inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    model.eval()
    started = time.perf_counter()
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=16, do_sample=False)
    elapsed = time.perf_counter() - started
    new = output[:, inputs["input_ids"].shape[1] :]
    stops = {tokenizer.eos_token_id, tokenizer.pad_token_id}
    generated = sum(
        next((i + 1 for i, token in enumerate(row.tolist()) if token in stops), len(row))
        for row in new
    )
    ratio = rates["eval_tokens_per_second"] / (generated / elapsed)
    assert 1 / RATE_TOLERANCE < ratio < RATE_TOLERANCE, (rates, generated, elapsed)


def test_the_reload_reproduces_the_trained_logits(lora_run: dict[str, Any]) -> None:
    reload = lora_run["report"]["reload"]
    assert reload["ok"] is True and reload["artifact"] == "adapter"
    # Same weights, inputs and kernels in fp32 on the CPU: the same bits.
    assert reload["max_logit_diff"] == 0.0
    # And the check has power: training moved the logits far beyond the tolerance.
    assert reload["training_effect"] > 100 * reload["tolerance"]
    assert reload["positions"] == lora_run["report"]["targets"][0]
    assert "reload: PASS" in lora_run["stdout"]


def test_the_mask_is_transformers_assistant_mask(tiny: TinyModels) -> None:
    """Every row, whole: the sequences smoke trains on are transformers' render and mask."""
    from evalkit.tokens.api import measure_settings
    from evalkit.tokens.load import load_tokenizer
    from evalkit.tokens.sequences import read_training_split, training_sequence

    tokenizer = load_tokenizer(tiny.base)
    settings = measure_settings(tokenizer, [tokenizer.eos_token_id], None, "keep_start")
    data = read_training_split(tiny.data, ["messages"], tokenizer, settings=settings,
                               markers=False)  # fmt: skip
    marked = _marked_tokenizer(tiny)
    for row, example in enumerate(_rows(tiny)):
        out = marked.apply_chat_template(
            example["messages"], tokenize=True, return_dict=True, return_assistant_tokens_mask=True
        )
        sequence = training_sequence(data, tokenizer, row)
        assert sequence.ids == list(out["input_ids"])
        assert sequence.supervised == [bool(m) for m in out["assistant_masks"]]


def test_the_same_seed_trains_on_the_same_rows_to_the_same_losses(tiny: TinyModels) -> None:
    from evalkit.model.load import load_model
    from evalkit.model.smoke import prepare
    from evalkit.model.training import new_adapter, to_tensors, train_steps

    def prepared(seed: int) -> Any:
        return prepare(tiny.base, tiny.data, text=["messages"], method="lora", r=None,
                       targets=None, steps=STEPS, seq_len=SEQ_LEN, batch_size=BATCH, lr=1e-3,
                       max_new_tokens=4, grad_checkpointing=False, device="cpu",
                       dtype="auto", seed=seed, tokenizer=None, loss=None)  # fmt: skip

    def losses(seed: int) -> list[float]:
        loaded = load_model(tiny.base, device="cpu")
        new_adapter(loaded, r=8, targets=["q_proj", "v_proj"], seed=seed)
        batches = [to_tensors(batch, "cpu") for batch in prepared(seed).batches]
        return train_steps(loaded.model, batches, lr=1e-3)

    first, again, other = prepared(0), prepared(0), prepared(1)
    assert [b.rows for b in first.batches] == [b.rows for b in again.batches]
    assert [b.rows for b in first.batches] != [b.rows for b in other.batches]
    assert losses(0) == losses(0)


def test_gradient_checkpointing_recomputes_the_same_steps(tiny: TinyModels) -> None:
    from evalkit.model.load import load_model
    from evalkit.model.smoke import prepare
    from evalkit.model.training import enable_checkpointing, new_adapter, to_tensors, train_steps

    batches = prepare(tiny.base, tiny.data, text=["messages"], method="lora", r=None,
                      targets=None, steps=STEPS, seq_len=SEQ_LEN, batch_size=BATCH, lr=1e-3,
                      max_new_tokens=4, grad_checkpointing=True, device="cpu", dtype="auto",
                      seed=0, tokenizer=None, loss=None).batches  # fmt: skip

    def losses(checkpointing: bool) -> list[float]:
        loaded = load_model(tiny.base, device="cpu")
        new_adapter(loaded, r=8, targets=["q_proj", "v_proj"], seed=0)
        if checkpointing:
            enable_checkpointing(loaded)
            assert any(getattr(m, "gradient_checkpointing", False) for m in loaded.model.modules())
        return train_steps(loaded.model, [to_tensors(b, "cpu") for b in batches], lr=1e-3)

    assert losses(True) == pytest.approx(losses(False), rel=1e-6)


def test_full_fine_tuning_saves_and_reloads_the_model(run_cli, tiny, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    path = tmp_path / "full.json"
    result = run_cli(*_args(tiny, "--method", "full", "--json", path))
    assert result.exit_code == 0, result.stdout + result.stderr
    report = json.loads(path.read_text())
    total = AutoModelForCausalLM.from_pretrained(str(tiny.base)).num_parameters()
    assert report["trainable_params"] == total == report["plan"]["trainable_params"]
    assert report["reload"]["artifact"] == "model" and report["reload"]["ok"] is True
    assert report["reload"]["max_logit_diff"] == 0.0
    assert report["plan"]["inputs"]["options"]["method"] == "full"
    assert "full fine-tuning" in result.stdout


def test_a_reload_that_lost_the_training_fails(run_cli, tiny, tmp_path, monkeypatch) -> None:
    """Planted: the saved adapter's B is zero again (saved before training, say)."""
    import torch
    from safetensors.torch import load_file, save_file

    from evalkit.model import smoke_run

    original = smoke_run._save

    def save_untrained(loaded: Any, folder: Path) -> int:
        size = original(loaded, folder)
        weights = folder / "adapter_model.safetensors"
        tensors = load_file(str(weights))
        zeroed = {k: torch.zeros_like(v) if "lora_B" in k else v for k, v in tensors.items()}
        save_file(zeroed, str(weights))
        return size

    monkeypatch.setattr(smoke_run, "_save", save_untrained)
    path = tmp_path / "smoke.json"
    result = run_cli(*_args(tiny, "--json", path))
    assert result.exit_code == 1, result.stdout + result.stderr
    report = json.loads(path.read_text())
    assert report["verdict"] == "fail" and report["reload"]["ok"] is False
    reload = report["reload"]
    # The reload is the untrained model: it differs from the trained one by the training itself.
    assert reload["max_logit_diff"] == pytest.approx(reload["training_effect"])
    assert reload["max_logit_diff"] > reload["tolerance"]
    assert "what was saved is not what was trained" in result.stdout
    assert "reload: FAIL" in result.stdout and result.stdout.rstrip().endswith("smoke: FAIL")


def test_a_diverging_run_fails(run_cli, tiny, tmp_path, monkeypatch) -> None:
    from evalkit.model import smoke_run

    monkeypatch.setattr(smoke_run, "_export", lambda *args: None)  # the reload is tested above
    path = tmp_path / "smoke.json"
    result = run_cli(*_args(tiny, "--lr", "1e30", "--json", path))
    assert result.exit_code == 1, result.stdout + result.stderr
    report = json.loads(path.read_text())
    assert report["losses"][0] is not None and None in report["losses"]
    assert any(problem.startswith("train: the loss of step") for problem in report["problems"])
    assert "not finite" in result.stdout


def test_running_out_of_memory_names_the_phase(run_cli, tiny, tmp_path, monkeypatch) -> None:
    import torch

    from evalkit.model import smoke_run

    def out_of_memory(*args: Any) -> None:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(smoke_run, "_generate", out_of_memory)
    path = tmp_path / "smoke.json"
    result = run_cli(*_args(tiny, "--json", path))
    assert result.exit_code == 1, result.stdout + result.stderr
    report = json.loads(path.read_text())
    assert report["problems"][0].startswith("eval: ran out of cpu memory (CUDA out of memory.")
    # The phase that ran out keeps the peak it reached; the phases after it never ran.
    assert (
        report["phases"]["train"]["measured_gb"] > 0 and report["phases"]["eval"]["measured_gb"] > 0
    )
    assert report["phases"]["export"]["measured_gb"] is None and report["reload"] is None
    assert "reload: did not run" in result.stdout


def _plain_text(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "text.jsonl", [{"messages": "just text"}] * 3)


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"--base": "EMPTY"}, ["holds no model"]),
        ({"--text": "nope"}, ["no column 'nope'"]),
        ({"--steps": 0}, ["'--steps': must be a positive integer, got 0"]),
        ({"--seq-len": 0}, ["'--seq-len': must be a positive number of tokens, got 0"]),
        ({"--seq-len": 2}, ["no row keeps a supervised token", "raise --seq-len"]),
        ({"--data": "TEXT"}, ["holds plain text, not conversations"]),
        ({"--data": "FOLDER"}, ["is a folder; pass one split file"]),
        ({"--method": "full", "--r": 4}, ["--r applies to lora and qlora"]),
        ({"--targets": "lm_head"}, ["'lm_head' is not a linear"]),
    ],
)
def test_bad_input_is_one_line(run_cli, tiny, tmp_path, change, fragments) -> None:
    places = {"EMPTY": tmp_path / "empty", "TEXT": _plain_text(tmp_path), "FOLDER": tmp_path}
    places["EMPTY"].mkdir()
    args = _args(tiny)
    for option, value in change.items():
        value = places.get(str(value), value)
        if option in args:
            args[args.index(option) + 1] = str(value)
        else:
            args += [option, str(value)]
    assert_one_line_error(run_cli(*args), *fragments)


def test_cuda_without_a_gpu_is_refused(run_cli, tiny) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    args = _args(tiny)
    args[args.index("--device") + 1] = "cuda"
    assert_one_line_error(run_cli(*args), "--device cuda: no CUDA GPU is available")


def test_an_existing_json_needs_force(run_cli, tiny, tmp_path: Path) -> None:
    path = tmp_path / "smoke.json"
    path.write_text("mine")
    assert_one_line_error(run_cli(*_args(tiny, "--json", path)), "exists already", "--force")
    assert path.read_text() == "mine"
