"""The plain-text summary ``evalkit audit`` prints: verdict, counts, examples, coverage."""

from __future__ import annotations

from evalkit.records._audit import AuditReport

EXAMPLES = 5


def render_audit_summary(report: AuditReport, json_path: str | None = None) -> str:
    """A short report for a terminal or CI log; the full lists go to ``--json``."""
    splits = report.splits
    sizes = ", ".join(f"{name} ({summary.n_items:,})" for name, summary in splits.items())
    lines = [f"audit of {len(splits)} splits: {sizes}"]
    shapes = sorted({summary.shape for summary in splits.values()} - {"text"})
    if shapes:
        options = report.options
        given = options.columns or [c for c in (options.text, options.completion) if c]
        columns = " + ".join(given)
        written = ", JSON text" if any(s.json_text for s in splits.values()) else ""
        calls = sum(summary.tool_calls for summary in splits.values())
        compared = "turns, their tool calls included" if calls else "turns"
        lines.append(
            f"text: conversations ({', '.join(shapes)}{written}) in {columns}; compared: the "
            f"{', '.join(options.roles)} {compared}"
        )
    if report.lsh is not None:
        lsh = report.lsh
        lines.append(
            f"near duplicates: Jaccard of word {lsh.shingle_size}-shingles >= {lsh.threshold:g}; "
            f"MinHash {lsh.num_perm} permutations, {lsh.bands} bands x {lsh.rows} rows"
        )
        lines.append(
            f"  (a pair at the threshold is missed with probability {lsh.false_negative_rate:.1e})"
        )
    counts = report.counts
    lines += ["", f"{'leak':<32} {'found':>8}"]
    if report.options.group:
        lines.append(f"{'groups in several splits':<32} {counts.group_leaks:>8,}")
    lines.append(f"{'ids in several splits':<32} {counts.id_overlaps:>8,}")
    lines.append(f"{'exact duplicate pairs':<32} {counts.exact_duplicates:>8,}")
    if report.lsh is not None:
        lines.append(f"{'near-duplicate pairs':<32} {counts.near_duplicates:>8,}")
    lines += ["", *_split_table(report)]
    examples = _examples(report)
    if examples:
        lines += ["", "examples:", *examples]
    if report.classes and any(s.missing_classes for s in splits.values()):
        lines.append("")
        for name, summary in splits.items():
            if summary.missing_classes:
                missing = ", ".join(summary.missing_classes)
                lines.append(f"warning: split {name} has no item of class {missing}")
    if report.within:
        lines += ["", *_within_table(report)]
    lines.append("")
    if report.leak:
        where = f"; full lists in {json_path}" if json_path else "; --json FILE for full lists"
        lines.append(f"LEAK: items of one split reappear in another (exit 1){where}")
    else:
        lines.append("no leak found")
    return "\n".join(lines)


def _split_table(report: AuditReport) -> list[str]:
    with_groups = report.options.group != []
    header = f"{'split':<12} {'items':>9}"
    header += f" {'groups':>8}" if with_groups else ""
    header += f" {'empty text':>10} {'dup. elsewhere':>14}"
    header += f" {'classes':>8}" if report.classes else ""
    lines = [header]
    for name, summary in report.splits.items():
        row = f"{name:<12} {summary.n_items:>9,}"
        row += f" {summary.n_groups or 0:>8,}" if with_groups else ""
        row += f" {summary.empty_texts:>10,} {summary.items_with_duplicate_elsewhere:>14,}"
        if report.classes:
            present = len(report.classes) - len(summary.missing_classes)
            row += f" {f'{present}/{len(report.classes)}':>8}"
        lines.append(row)
    return lines


def _examples(report: AuditReport) -> list[str]:
    lines = []
    for leak in report.group_leaks[:EXAMPLES]:
        spread = ", ".join(f"{split} {n}" for split, n in leak.items.items())
        lines.append(f"  group {leak.group}: {spread}")
    for overlap in report.id_overlaps[:EXAMPLES]:
        lines.append(f"  id {overlap.id} in {', '.join(overlap.splits)}")
    for pair in report.exact_duplicates[:EXAMPLES]:
        lines.append(f"  exact: {pair.a} ({pair.a_split}) = {pair.b} ({pair.b_split})")
    for near in report.near_duplicates[:EXAMPLES]:
        lines.append(
            f"  near:  {near.a} ({near.a_split}) ~ {near.b} ({near.b_split}), "
            f"Jaccard {near.similarity:.2f}"
        )
    return lines


def _share(share: float | None, items: int | None) -> str:
    return "-" if share is None or items is None else f"{share:.1%} ({items:,})"


def _within_table(report: AuditReport) -> list[str]:
    """Repetition inside each split: shares, largest clusters, most repeated openings."""
    lines = [
        "repetition within each split (not a leak):",
        f"{'split':<12} {'in exact dup.':>14} {'in near dup.':>14} {'clusters':>9}  "
        "largest (example id)",
    ]
    for name, within in report.within.items():
        largest = ", ".join(f"{c.size} ({c.example_id})" for c in within.clusters[:3]) or "-"
        lines.append(
            f"{name:<12} {_share(within.exact_share, within.in_exact_clusters):>14} "
            f"{_share(within.near_share, within.in_near_clusters):>14} "
            f"{within.n_clusters:>9,}  {largest}"
        )
    words = report.options.opening_words
    for name, within in report.within.items():
        if within.openings:
            shown = ", ".join(f'"{o.text}" x{o.n}' for o in within.openings[:2])
            lines.append(f"  {name} openings ({words} words): {shown}")
    if report.within_exact_duplicates is not None:
        near = report.within_near_duplicates
        found = f"{len(report.within_exact_duplicates):,} exact"
        found += f", {len(near):,} near-duplicate" if near is not None else ""
        cut = report.within_truncated or {}
        cut_splits = sorted(set(cut.get("exact", [])) | set(cut.get("near", [])))
        if cut_splits:
            lines += [
                f"  pairs inside splits (--within): {found} in --json, at most "
                f"{report.within_pairs_limit:,} of each kind per split;",
                f"  {', '.join(cut_splits)} had more (the clusters above count every item)",
            ]
        else:
            lines.append(f"  pairs inside splits (--within): {found}; every pair in --json")
    return lines
