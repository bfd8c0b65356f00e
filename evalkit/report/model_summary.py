"""The short reports ``evalkit generate`` and ``evalkit reload-check`` print."""

from __future__ import annotations

from evalkit.records._run import Divergence, ReloadReport, RunRecord, TokenInfo


def _artifact(run: RunRecord) -> str:
    if run.adapter is not None:
        return f"{run.base.path} + adapter {run.adapter.path}"
    return run.base.path


def _decoding(run: RunRecord, batches: int) -> str:
    generation = run.generation
    where = f"max {generation.max_new_tokens} new tokens, on {run.device.type} "
    where += f"({run.device.name}) in {run.dtype}"
    if run.vllm is None:
        return (
            f"decoding   greedy, {batches} batches of up to "
            f"{generation.batch_size}, left-padded, {where}"
        )
    vllm = run.vllm
    lora = f", max_lora_rank {vllm.max_lora_rank}" if vllm.max_lora_rank is not None else ""
    return (
        f"decoding   greedy (vLLM {vllm.version}, generation_config vllm{lora}), up to "
        f"{vllm.max_num_seqs} sequences at once, {where}; batch invariance "
        f"{'on' if vllm.batch_invariant else 'off'}"
    )


def render_generate_summary(run: RunRecord, batches: int, out: str) -> str:
    """What was generated, with what, and where it went."""
    outputs = run.outputs
    generation = run.generation
    lines = [
        f"generated {run.data.n:,} outputs for {run.data.path} -> {out}",
        f"model      {_artifact(run)} ({run.kind})",
        f"tokenizer  {run.tokenizer.path} (chat template "
        f"{(run.tokenizer.chat_template_sha256 or 'none')[:12]}…)",
        _decoding(run, batches),
        f"stopped    {outputs.stopped_at_eos} at eos, {outputs.stopped_at_length} at "
        "max-new-tokens",
    ]
    if run.adapter is not None:
        card = run.adapter.card
        lora = f"r={card.lora.r}, " if card.lora is not None else ""
        codes = ", ".join(sorted({problem.code for problem in card.problems}))
        problems = f"; card problems: {codes} (run.json has them)" if codes else ""
        lines.append(
            f"card       {card.peft_type} {lora}{len(card.modules)} modules, "
            f"{card.trainable_params:,} trainable parameters{problems}"
        )
    if generation.not_applied:
        ignored = ", ".join(
            f"{key}={value}" for key, value in sorted(generation.not_applied.items())
        )
        lines.append(f"note: generation_config.json settings not applied (greedy): {ignored}")
    lines += [
        f"wrote      predictions.jsonl, tokens.parquet, run.json "
        f"({len(run.base.files) + len(run.adapter.files if run.adapter else {})} model files, "
        f"{len(run.tokenizer.files)} tokenizer files and the data pinned by sha256)",
    ]
    return "\n".join(lines)


def _token(token: TokenInfo | None) -> str:
    return "(end)" if token is None else f"{token.id} {token.text!r}"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _divergence(difference: Divergence) -> str:
    where = f"{difference.part} token {difference.position}"
    line = (
        f"  {difference.id}: first differs at {where}: run {_token(difference.run_token)}, "
        f"reload {_token(difference.reload_token)}"
    )
    if difference.part == "output":
        line += (
            f"; max logit diff {_number(difference.max_logit_diff)}, gap reload "
            f"{_number(difference.reload_gap)} / run {_number(difference.run_gap)}"
        )
    return line


def render_reload_summary(report: ReloadReport) -> str:
    """The verdict first, then what was reloaded and every divergent control example."""
    total = len(report.controls)
    artifact = (
        f"merged folder {report.merged.path}" if report.merged is not None else report.artifact
    )
    rate = f"exact-match rate {report.match_rate:.4g}"
    if report.min_match < 1:
        rate += f", at least {report.min_match:g} passes"
    verdict = (
        f"PASS: {report.identical}/{total} control examples identical ({rate})"
        if report.verdict == "pass"
        else f"FAIL: {total - report.identical}/{total} control examples differ ({rate})"
    )
    engine = f"vLLM {report.vllm.version}" if report.vllm is not None else "transformers"
    made = "" if report.backend == report.run_backend else f"; the run was {report.run_backend}'s"
    layout = (
        "their whole batches, in the run's layout"
        if report.backend == report.run_backend == "hf"
        else "the controls alone, longest first"
    )
    lines = [
        f"reload-check {report.run}: {verdict}",
        f"reloaded   {artifact} with {engine} ({report.backend}{made}) in a fresh process, on "
        f"{report.device} in {report.dtype}",
        f"pins       {len(report.pins_checked)} files verified by sha256 before loading"
        + (
            " (the run's outputs and data; the merged folder stands for base and adapter)"
            if report.merged is not None
            else ""
        ),
        f"controls   {total} chosen with seed {report.seed}; {report.regenerated} examples "
        f"regenerated ({layout})",
    ]
    if report.differences:
        lines += ["", "differences (id: position, run token, reload token, logits there):"]
        lines += [_divergence(difference) for difference in report.differences]
    return "\n".join(lines)
