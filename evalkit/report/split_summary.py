"""The per-split report ``evalkit split`` prints: counts, classes, lengths, quality."""

from __future__ import annotations

from evalkit.records._manifest import SplitManifest, TextInfo


def _worst_class(deviations: dict[str, float]) -> str:
    if not deviations:
        return "-"
    label = max(deviations, key=lambda key: abs(deviations[key]))
    return f"{deviations[label]:+.2f} pp ({label})"


def render_split_summary(manifest: SplitManifest, out: str | None = None) -> str:
    """A plain-text table of the manifest, for people reading a terminal or CI log."""
    splits = manifest.splits
    stratified = manifest.options.stratify is not None
    has_length = any(report.length is not None for report in splits.values())
    where = f" -> {out}" if out else ""
    lines = [
        f"split {manifest.input.n_items:,} items in {manifest.input.n_groups:,} groups"
        f"{where} (seed {manifest.seed})",
        "",
    ]
    header = f"{'split':<12} {'target':>8} {'items':>8} {'dev':>5} {'groups':>7}"
    if has_length:
        unit = next(r.length.unit for r in splits.values() if r.length is not None)
        short = "tok" if unit == "tokens" else "len"
        header += f" {short + ' p50':>8} {short + ' p95':>8}"
    if stratified:
        header += "  worst class deviation"
    lines.append(header)
    for name, report in splits.items():
        row = (
            f"{name:<12} {report.target:>8,} {report.n_items:>8,} "
            f"{report.count_deviation:>+5d} {report.n_groups:>7,}"
        )
        if has_length:
            length = report.length
            row += f" {length.p50:>8.0f} {length.p95:>8.0f}" if length else f" {'-':>8} {'-':>8}"
        if stratified:
            row += f"  {_worst_class(report.class_share_deviation_pp)}"
        lines.append(row)
    if manifest.unused:
        lines.append(f"{'(unused)':<12} {'':>8} {manifest.unused:>8,}")
    if stratified:
        lines += ["", _class_table(manifest)]
    lines += ["", *_quality_lines(manifest)]
    return "\n".join(lines)


def _class_table(manifest: SplitManifest) -> str:
    splits = manifest.splits
    first = next(iter(splits.values()))
    labels = list(first.class_counts)
    total = {label: sum(r.class_counts[label] for r in splits.values()) for label in labels}
    n_items = max(sum(total.values()), 1)
    width = max([len(label) for label in labels] + [5])
    header = f"{'class':<{width}} {'share':>7}" + "".join(f" {name:>14}" for name in splits)
    rows = [header]
    for label in sorted(labels, key=lambda key: (-total[key], key)):
        row = f"{label:<{width}} {100 * total[label] / n_items:>6.1f}%"
        for report in splits.values():
            cell = f"{report.class_counts[label]} ({100 * report.class_shares[label]:.1f}%)"
            row += f" {cell:>14}"
        rows.append(row)
    return "\n".join(rows)


def _quality_lines(manifest: SplitManifest) -> list[str]:
    quality = manifest.quality
    lines = []
    if quality.max_count_deviation == 0:
        lines.append("counts: exact")
    else:
        items = "item" if quality.max_count_deviation == 1 else "items"
        lines.append(
            f"counts: off by up to {quality.max_count_deviation} {items} "
            "(no closer counts were found for these group sizes)"
        )
    if manifest.options.stratify is not None:
        lines.append(
            f"class shares: worst deviation {quality.max_class_share_deviation_pp:.2f} pp "
            f"({quality.max_class_share_deviation_pp_major:.2f} pp over classes >= 5% of items)"
        )
        missing = {
            name: labels for name, labels in quality.required_classes_missing.items() if labels
        }
        if missing:
            detail = "; ".join(f"{name}: {', '.join(labels)}" for name, labels in missing.items())
            lines.append(f"coverage: classes in enough groups but missing from a split: {detail}")
        else:
            covered = sum(1 for report in manifest.splits.values() if report.target > 0)
            lines.append(
                f"coverage: all {len(quality.required_classes)} classes found in >= "
                f"{covered} groups are in every split"
            )
    text = manifest.text
    if text is not None and text.kind == "conversation":
        written = ", JSON text" if text.json_text else ""
        line = f"text: conversations ({text.shape}{written}) in {' + '.join(text.columns)}"
        line += "; lengths count every turn"
        if manifest.merging is not None:
            line += f"; --near-dup compares the {', '.join(text.compared_roles or [])} turns"
        if text.skipped_parts:
            line += f"; {text.skipped_parts} non-text content parts skipped"
        lines.append(line)
        lines.extend(conversation_extras(text))
    if manifest.json_text_columns:
        lines.append(
            f"written as JSON text: {', '.join(manifest.json_text_columns)} (their keys differ "
            "from row to row; Parquet would give every row every key)"
        )
    if manifest.merging is not None:
        merging = manifest.merging
        lines.append(
            f"near duplicates (>= {merging.threshold}): {merging.merged_groups} groups merged, "
            f"largest merged group {merging.largest_merged_group} items"
        )
    lines += _repetition_lines(manifest)
    if manifest.freezing is not None:
        freezing = manifest.freezing
        lines.append(
            f"frozen: {freezing.frozen_groups} groups kept in place, {freezing.new_groups} new"
        )
    lines.append(f"leakage: {quality.leakage.groups_in_several_splits} groups in several splits")
    return lines


def _repetition_lines(manifest: SplitManifest) -> list[str]:
    """One line per split: how much of it is its own duplicates (with --near-dup)."""
    lines = []
    for name, within in (manifest.within or {}).items():
        clusters = within["clusters"]
        assert isinstance(clusters, list)
        largest = ""
        if clusters:
            largest = f"; largest {clusters[0]['size']} items (e.g. {clusters[0]['example_id']})"
        lines.append(
            f"repetition in {name}: {within['near_share']:.1%} of items in duplicate clusters "
            f"of their own split ({within['exact_share']:.1%} exact){largest}"
        )
    return lines


def conversation_extras(text: TextInfo) -> list[str]:
    """What a conversation column carried besides its turns: system prompts, tools, calls,
    training flags (nothing for plain conversations)."""
    lines = []
    if text.system_column is not None:
        line = (
            f"system: column {text.system_column} put first in {text.system_added:,} conversations"
        )
        if text.system_kept:
            line += f"; {text.system_kept:,} have their own system message (kept)"
        lines.append(line)
    if text.tools_column is not None or text.tool_calls or text.untrained_turns:
        parts = []
        if text.tools_column is not None:
            parts.append(f"tools from column {text.tools_column}")
        parts.append(f"{text.tool_calls:,} tool calls")
        if text.untrained_turns:
            parts.append(
                f"{text.untrained_turns:,} turns flagged not to train on (weight 0, training false)"
            )
        lines.append("tools: " + "; ".join(parts))
    return lines
