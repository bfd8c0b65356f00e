"""The plain-text report ``evalkit tokens`` prints: per-split figures, then every check."""

from __future__ import annotations

from evalkit.records._tokens import CheckResult, Quantiles, TokensReport

MARKS = {"pass": "ok", "warn": "WARN", "fail": "FAIL", "skip": "skip"}


def _spread(quantiles: Quantiles | None) -> str:
    if quantiles is None:
        return "-"
    return f"{quantiles.p50:.0f}/{quantiles.p95:.0f}/{quantiles.max}"


def _header(report: TokensReport) -> list[str]:
    options, tokenizer = report.options, report.tokenizer
    template = (
        f"chat template {tokenizer.chat_template_sha256[:12]}"
        if tokenizer.chat_template_sha256
        else "no chat template"
    )
    limit = f", max {options.max_seq_length} ({options.truncation_mode})"
    return [
        f"tokens of {', '.join(options.text)} ({options.kind}) with {tokenizer.path} ({template})",
        f"encode {options.encode}, loss on {options.loss}{limit if options.max_seq_length else ''}",
    ]


def _split_table(report: TokensReport) -> list[str]:
    truncated = report.options.max_seq_length is not None
    header = (
        f"{'split':<12} {'examples':>9} {'prompt p50/p95/max':>19} {'answer p50/p95/max':>19} "
        f"{'total p50/p95/p99/max':>22} {'supervised':>10}"
    )
    header += f" {'over':>6} {'cut':>6} {'all cut':>7} {'eos lost':>8}" if truncated else ""
    lines = [header]
    for name, split in report.splits.items():
        tokens = split.tokens
        total = (
            f"{tokens.total.p50:.0f}/{tokens.total.p95:.0f}/{tokens.total.p99:.0f}/"
            f"{tokens.total.max}"
            if tokens
            else "-"
        )
        ratio = f"{split.supervised_ratio:.1%}" if split.supervised_ratio is not None else "-"
        row = (
            f"{name:<12} {split.n:>9,} {_spread(tokens.prompt if tokens else None):>19} "
            f"{_spread(tokens.answer if tokens else None):>19} {total:>22} {ratio:>10}"
        )
        cut = split.truncation
        if cut is not None:
            row += (
                f" {cut.over_limit:>6,} {cut.answer_cut_partly:>6,} {cut.answer_cut_fully:>7,} "
                f"{cut.eos_lost:>8,}"
            )
        elif truncated:
            row += f" {'-':>6} {'-':>6} {'-':>7} {'-':>8}"
        lines.append(row)
    return lines


def _conversation_lines(report: TokensReport) -> list[str]:
    """Per split with tool calls or flagged turns: how the calls reached the template, and
    the supervised tokens and turns the training flags left out."""
    lines = []
    for name, split in report.splits.items():
        parts = []
        handed = split.arguments
        if split.tool_calls and handed is not None:
            ways = [
                f"{count:,} {label}"
                for count, label in (
                    (handed.parsed, "parsed from JSON text"),
                    (handed.text, "kept as text"),
                    (handed.as_written, "as written"),
                )
                if count
            ]
            calls = "tool call" if split.tool_calls == 1 else "tool calls"
            parts.append(f"{split.tool_calls:,} {calls} (arguments {', '.join(ways)})")
        if split.excluded_turns:
            turns = "turn" if split.excluded_turns == 1 else "turns"
            parts.append(
                f"{split.excluded_turns:,} assistant {turns} excluded by weight 0 / training false"
            )
        if parts:
            supervised = (
                f"; {split.supervised_tokens:,} supervised tokens"
                if split.supervised_tokens is not None
                else ""
            )
            lines.append(f"{name}: {'; '.join(parts)}{supervised}")
    return [*lines, ""] if lines else []


def _check_lines(check: CheckResult) -> list[str]:
    count = f"{check.count:,}" if check.status not in ("skip",) else "-"
    lines = [f"{check.name:<24} {MARKS[check.status]:<5} {count:>7}  {check.detail}"]
    if check.examples and check.status in ("warn", "fail"):
        shown = ", ".join(f"{e.split}:{e.id}" for e in check.examples)
        more = " …" if check.count > len(check.examples) else ""
        lines.append(f"{'':<24} {'':<5} {'':>7}  e.g. {shown}{more}")
    return lines


def _verdict(report: TokensReport, json_path: str | None) -> str:
    failed = [c.name for c in report.checks if c.status == "fail"]
    warned = [c.name for c in report.checks if c.status == "warn"]
    where = f"; everything in {json_path}" if json_path else ""
    if failed:
        return f"FAIL: {', '.join(failed)} (exit 1){where}"
    if warned:
        return f"pass with warnings: {', '.join(warned)}{where}"
    return f"pass: every check passed{where}"


def render_tokens_summary(
    report: TokensReport, json_path: str | None = None, html_path: str | None = None
) -> str:
    """A short report for a terminal or CI log; the whole report goes to ``--json``.

    Without the chat template that conversations need nothing else could be
    measured, and the report is one line saying so.
    """
    template = report.check("template")
    if template.status == "fail":
        return f"FAIL template: {template.detail} (exit 1)"
    lines = [*_header(report), "", *_split_table(report), "", *_conversation_lines(report)]
    lines.append(f"{'check':<24} {'':<5} {'count':>7}  detail")
    for check in report.checks:
        lines += _check_lines(check)
    lines.append("")
    if html_path:
        lines.append(f"examples, token by token: {html_path}")
    lines.append(_verdict(report, json_path))
    return "\n".join(lines)
