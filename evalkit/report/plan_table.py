"""The tables ``evalkit plan`` prints: the training step's moments and the cycle's phases."""

from __future__ import annotations

from evalkit.records._plan import PlanResult

_TERM_LABELS = {
    "quantized_linears": "quantized linears",
    "quantization_constants": "quantization constants",
    "unquantized_weights": "unquantized weights",
    "trainable_params": "trainable params (adapter)",
    "optimizer_states": "optimizer states",
    "gradients": "gradients",
    "activations": "activations",
    "logits": "logits (loss)",
    "temporaries": "temporaries",
}
_STEP_LABELS = {
    "loss_backward": "loss backward",
    "block_backward": "block backward",
    "optimizer_step": "optimizer step",
}


def _headline(result: PlanResult) -> list[str]:
    config = result.inputs.config
    options = result.inputs.options
    family = config.model_type if config.known_family else f"{config.model_type}, as Llama"
    heads = f"{config.num_heads} heads ({config.num_kv_heads} kv)"
    model = (
        f"{config.path}: {family}, {config.total_params / 1e9:.2f} B params, "
        f"{config.num_layers} layers, hidden {config.hidden_size}, {heads}, "
        f"vocab {config.vocab_size:,}{', tied embeddings' if config.tied_embeddings else ''}"
    )
    if options.method == "full":
        method = f"full fine-tuning: {result.trainable_params:,} trainable"
    else:
        quant = ""
        if options.method == "qlora":
            prep = ", k-bit prep" if options.kbit_prep else ""
            quant = f" {options.quant}{prep}"
        method = (
            f"{options.method}{quant}, r {options.r} on {options.targets_spec}: "
            f"{result.trainable_params:,} trainable"
        )
    step = [
        method,
        options.precision,
        f"{options.batch} x {options.seq_len:,} tokens",
        "grad checkpointing" if options.grad_checkpointing else "no grad checkpointing",
        options.attention,
        options.optimizer,
        f"{options.gpus} GPU{'s, fully sharded' if options.gpus > 1 else ''}",
    ]
    return [f"plan: {model}", "      " + " | ".join(step)]


def _step_table(result: PlanResult) -> list[str]:
    steps = result.train_steps
    width = max(len(label) for label in _TERM_LABELS.values()) + 4
    header = f"{'train step, GB per GPU':<{width}}" + "".join(
        f"{_STEP_LABELS[name]:>16}" for name in steps
    )
    lines = [header]
    for term, label in _TERM_LABELS.items():
        values = [step.terms.get(term, 0.0) for step in steps.values()]
        if not any(values):
            continue
        lines.append(f"  {label:<{width - 2}}" + "".join(f"{value:>16.2f}" for value in values))
    total = f"{'  lower bound':<{width}}"
    for name, step in steps.items():
        mark = " *" if name == result.train_peak_step else "  "
        total += f"{step.gb:>14.2f}{mark}"
    lines.append(total)
    lines.append("  (* the peak, the train phase: terms of different moments are never summed)")
    return lines


def _phase_note(result: PlanResult, phase: str) -> str:
    options = result.inputs.options
    if phase == "eval":
        kv = result.phase_terms["eval"].terms.get("kv_cache", 0.0)
        return f"KV cache {kv:.2f} GB: {options.eval_batch} x {options.eval_tokens:,} tokens"
    if phase == "export":
        if options.export == "merge":
            return "merge into a 16-bit base (2 bytes/param)"
        return "save the adapter" if options.export == "adapter" else "save the weights"
    if phase == "train":
        return f"at the {_STEP_LABELS[result.train_peak_step]}"
    return "the base as held for training"


def _phase_table(result: PlanResult) -> list[str]:
    lines = [f"{'phase':<8}{'bound GB':>10}{'needs GB':>10}{'card':>7}  what"]
    for phase, gb in result.phases.items():
        fit = result.phase_fit[phase]
        cell = f"{fit.gpu_gb}" if fit.gpu_gb is not None else "-"
        mark = "  <- largest" if phase == result.recommendation.phase else ""
        lines.append(
            f"{phase:<8}{gb:>10.2f}{fit.needs_gb:>10.2f}{cell:>7}  "
            f"{_phase_note(result, phase)}{mark}"
        )
    apart = result.apart
    lines.append(
        f"  needs = bound + CUDA context {apart.cuda_context:.2f} GB + 10% allocator slack "
        "(both outside the bound)"
    )
    if apart.paged_optimizer_states:
        lines.append(
            f"  paged optimizer states {apart.paged_optimizer_states:.2f} GB live in unified "
            "memory, outside the bound"
        )
    return lines


def _recommendation(result: PlanResult) -> str:
    chosen = result.recommendation
    if chosen.gpu_gb is not None:
        cards = (
            f"{chosen.gpus} x {chosen.gpu_gb} GB"
            if (chosen.gpus or 1) > 1
            else f"{chosen.gpu_gb} GB"
        )
        return f"recommendation: {cards} - {chosen.advice}"
    return f"recommendation: {chosen.advice}"


def render_plan(result: PlanResult, json_path: str | None = None) -> str:
    """The plan for a terminal: headline, the step's moments, the phases, the card to rent."""
    from evalkit.report.plan_sheet import render_sheet
    from evalkit.report.plan_time import render_time

    lines = [*_headline(result), "", *_step_table(result), "", *_phase_table(result), ""]
    lines.append(_recommendation(result))
    lines += render_time(result)
    sheet = render_sheet(result)
    if sheet:
        lines += ["", *sheet]
    if json_path:
        lines.append(f"plan written to {json_path}")
    return "\n".join(line.rstrip() for line in lines)
