"""The text ``evalkit card`` prints: identity, base, settings, modules by kind, problems."""

from __future__ import annotations

from collections import Counter

from evalkit.records._card import AdapterCard, LoraSettings


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _number(value: float) -> str:
    return f"{value:g}"


def _lora_line(lora: LoraSettings) -> str:
    parts = [
        f"r={lora.r}",
        f"lora_alpha={_number(lora.lora_alpha)}",
        f"scaling {lora.scaling_rule} = {_number(round(lora.scaling, 6))}",
        f"dropout {_number(lora.lora_dropout)}",
        f"init {str(lora.init_lora_weights).lower()}",
    ]
    if lora.use_dora:
        parts.append("DoRA")
    if lora.bias != "none":
        parts.append(f"bias {lora.bias}")
    return ", ".join(parts)


def _targets(lora: LoraSettings) -> str:
    targets = lora.target_modules
    if targets is None:
        return "(none)"
    if isinstance(targets, str):
        return f"regex {targets!r}"
    shown = ", ".join(targets[:8])
    return shown + (f" and {len(targets) - 8} more" if len(targets) > 8 else "")


def _module_rows(card: AdapterCard) -> list[str]:
    groups: Counter[tuple[str, str, int, int, int, int]] = Counter()
    for module in card.modules:
        last = module.name.rsplit(".", 1)[-1]
        groups[(last, module.kind, module.d_in, module.d_out, module.r, module.params)] += 1
    rows = []
    for (last, kind, d_in, d_out, r, params), count in sorted(groups.items()):
        rows.append(
            f"  {last:<18} ×{count:<4} {kind:<9} {d_in:>6} → {d_out:<6} r={r:<4} "
            f"{params:>12,} params each"
        )
    return rows


def _servable_lines(card: AdapterCard) -> list[str]:
    servable = card.servable
    if servable is None:
        return ["servable   not assessed (a card of version 1: write it again with evalkit card)"]
    if servable.vllm:
        rank = servable.max_lora_rank
        return [f"servable   vllm: yes (max_lora_rank {rank}; rules of {servable.rules})"]
    lines = [f"servable   vllm: NO, by the rules of {servable.rules}:"]
    lines += [f"  {problem.code}: {problem.message}" for problem in servable.problems]
    return lines


def render_card_summary(card: AdapterCard, out: str | None = None) -> str:
    """A plain-text view of a card, for a terminal or a CI log."""
    base = card.base
    pin = f"@ {base.revision}" if base.revision else "@ (no revision)"
    pin += "" if base.pinned else "  UNPINNED"
    quant = f", quantized {base.quantization}" if base.quantization else ""
    lines = [
        f"adapter {card.path}: {card.peft_type} (peft {card.peft_version or 'unknown'}), "
        f"task {card.task_type or '(none)'}",
        f"base       {base.id or '(unnamed)'} {pin}{quant}",
    ]
    if card.lora is not None:
        lines.append(f"lora       {_lora_line(card.lora)}")
        lines.append(f"targets    {_targets(card.lora)}")
        if card.lora.rank_pattern:
            lines.append(f"rank_pattern  {card.lora.rank_pattern}")
        if card.lora.alpha_pattern:
            lines.append(f"alpha_pattern {card.lora.alpha_pattern}")
        if card.lora.modules_to_save:
            lines.append(f"modules_to_save {', '.join(card.lora.modules_to_save)}")
    full = [tensor for tensor in card.full_tensors if tensor.trainable]
    lines.append(
        f"trainable  {card.trainable_params:,} parameters ({len(card.modules)} modules"
        + (f", {len(full)} full tensors" if full else "")
        + ")"
    )
    lines += _module_rows(card)
    for tensor in card.full_tensors:
        note = "trained" if tensor.trainable else "saved, not trained"
        lines.append(f"  {tensor.name} {tensor.shape} {tensor.role} ({note})")
    lines.append(
        f"weights    {card.weights_file} ({', '.join(card.weights_dtype) or 'empty'}), "
        f"sha256 {card.weights_sha256[:16]}…"
    )
    if base.path is not None:
        found = {"shape_mismatch", "coverage", "vocab_mismatch"} & {p.code for p in card.problems}
        outcome = "see the problems below" if found else "shapes and target coverage agree"
        sha = (base.config_sha256 or "")[:12]
        lines.append(f"checked    against {base.path} (config sha256 {sha}…): {outcome}")
    if card.tokenizer is not None:
        template = "with" if card.tokenizer.chat_template_sha256 else "without"
        length = f"{card.tokenizer.length:,} tokens" if card.tokenizer.length else "length unknown"
        lines.append(f"tokenizer  saved ({length}, {template} a chat template)")
    if card.training:
        keys = ", ".join(sorted(card.training)[:6])
        more = f" and {len(card.training) - 6} more" if len(card.training) > 6 else ""
        lines.append(f"training   {len(card.training)} settings ({keys}{more})")
    lines += _servable_lines(card)
    errors = len(card.errors)
    warnings = len(card.problems) - errors
    if card.problems:
        lines.append("problems")
        for problem in card.problems:
            lines.append(f"  {problem.severity:<8} {problem.code}: {problem.message}")
    where = f" -> {out}" if out else ""
    verdict = (
        "no problem"
        if not card.problems
        else f"{_count(errors, 'error')}, {_count(warnings, 'warning')}"
    )
    lines.append(f"card: {verdict}{where}")
    return "\n".join(lines)
