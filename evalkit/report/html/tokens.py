"""``evalkit tokens --html``: the checks, the figures, and sampled examples token by token.

Built on the shared page shell (:mod:`evalkit.report.html.page`): one
self-contained file, no script, byte-identical for the same inputs. Each
sampled example shows its training sequence and its inference prompt side
by side, one box per token with its id under it: supervised tokens have a
tinted box *and* a thick underline, special tokens are bold and purple,
tokens beyond --seq-len are struck through, and the first token
where the prompt leaves the training sequence is outlined in both columns
(a meaning never rests on colour alone). Whitespace is drawn (``·`` space,
``↵`` newline, ``→`` tab).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalkit.records._tokens import CheckResult, Quantiles, TokenCounts, TokensReport
from evalkit.report.html.page import (
    Html,
    Section,
    Tone,
    badge,
    element,
    join,
    page,
    paragraph,
    table,
    verdict_box,
)
from evalkit.tokens.samples import Sample, ShownToken

if TYPE_CHECKING:
    from evalkit.tokens.api import TokensResult

COUNTED = ("prompt", "answer", "total")
TONES: dict[str, Tone] = {"pass": "pass", "fail": "fail", "warn": "warn", "skip": "note"}
TOKEN_CSS = """
.pair{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.seq{font:12px/1.2 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;
border:1px solid var(--line);border-radius:4px;padding:6px;background:var(--soft)}
.tok{display:inline-flex;flex-direction:column;align-items:center;margin:1px;padding:1px 2px;
border:1px solid var(--line);border-bottom-width:3px;background:#fff;white-space:pre}
.tok sub{font-size:9px;color:var(--muted)}
.tok.sup{background:var(--pass-bg);border-bottom-color:var(--blue)}
.tok.spc{font-weight:700;color:#7a2f5c}
.tok.cut{text-decoration:line-through;opacity:.55}
.tok.div{outline:3px solid var(--vermillion);outline-offset:1px}
.legend .tok{margin-right:10px}
"""


def _visible(text: str) -> str:
    return text.replace(" ", "·").replace("\t", "→").replace("\n", "↵")


def _token(token: ShownToken, diverges: bool) -> Html:
    classes = ["tok"]
    classes += ["sup"] if token.supervised else []
    classes += ["spc"] if token.special else []
    classes += [] if token.kept else ["cut"]
    classes += ["div"] if diverges else []
    title = f"id {token.id}" + (", supervised" if token.supervised else "")
    box = element(
        "span", _visible(token.text), element("sub", token.id), class_=" ".join(classes),
        title=title,
    )  # fmt: skip
    return Html(box + ("<br>" if token.text.endswith("\n") else ""))


def _sequence(tokens: Sequence[ShownToken], divergence: int | None) -> Html:
    return element(
        "div", *(_token(t, index == divergence) for index, t in enumerate(tokens)), class_="seq"
    )


def _sample(sample: Sample) -> Section:
    supervised = sum(token.supervised for token in sample.train)
    train = element(
        "div", element("strong", "training sequence"), _sequence(sample.train, sample.divergence)
    )
    if sample.prompt is None:
        prompt = element(
            "div", element("strong", "inference prompt"), paragraph("none: no prompt", muted=True)
        )
    else:
        where = (
            "a token prefix of the training sequence"
            if sample.divergence is None
            else f"leaves the training sequence at token {sample.divergence} (outlined)"
        )
        prompt = element(
            "div",
            element("strong", "inference prompt"),
            f" ({len(sample.prompt)} tokens, {where})",
            _sequence(sample.prompt, sample.divergence),
        )
    title = f"{sample.split}: {sample.id} ({len(sample.train)} tokens, {supervised} supervised)"
    return Section(title, element("div", train, prompt, class_="pair"), level=3)


def _checks(report: TokensReport) -> Html:
    def row(check: CheckResult) -> list[object]:
        examples = ", ".join(f"{e.split}:{e.id}" for e in check.examples)
        more = " …" if check.count > len(check.examples) else ""
        return [
            check.name,
            badge(check.status.upper(), TONES[check.status]),
            f"{check.count:,}" if check.status != "skip" else "-",
            check.detail,
            examples + (more if examples else ""),
        ]

    return table(
        ["check", "status", "count", "detail", "examples"],
        [row(check) for check in report.checks],
        numeric=[2],
        row_tones=["fail" if c.status == "fail" else None for c in report.checks],
    )


def _spread(tokens: TokenCounts | None, kind: str) -> str:
    if tokens is None:
        return "-"
    q: Quantiles = getattr(tokens, kind)
    return f"{q.p50:.0f} / {q.p95:.0f} / {q.p99:.0f} / {q.max}"


def _splits(report: TokensReport) -> Html:
    rows = []
    for name, split in report.splits.items():
        cut = split.truncation
        truncation = (
            f"{cut.over_limit:,} over {cut.max_seq_length}; {cut.answer_cut_partly:,} cut partly, "
            f"{cut.answer_cut_fully:,} fully, {cut.eos_lost:,} lost the stop token"
            if cut
            else "-"
        )
        ratio = f"{split.supervised_ratio:.1%}" if split.supervised_ratio is not None else "-"
        rows.append(
            [
                name,
                f"{split.n:,}",
                *(_spread(split.tokens, kind) for kind in COUNTED),
                ratio,
                truncation,
            ]
        )
    header = ["split", "examples", "prompt p50/p95/p99/max", "answer", "total", "supervised"]
    return table([*header, "truncation"], rows, numeric=[1, 5])


def _lead(report: TokensReport) -> Html:
    failed = [c for c in report.checks if c.status == "fail"]
    warned = [c for c in report.checks if c.status == "warn"]
    if failed:
        return verdict_box(
            "fail",
            f"{len(failed)} check(s) fail (exit 1)",
            [f"{c.name} ({c.count:,} examples): {c.detail}" for c in failed],
        )
    if warned:
        return verdict_box(
            "note",
            "No check fails; read the warnings",
            [f"{c.name}: {c.detail}" for c in warned],
            word="! WARN",
        )
    return verdict_box("pass", "Every check passes")


def render_tokens_html(report: TokensReport, samples: Sequence[Sample]) -> str:
    """The whole page as one string."""
    tokenizer, options = report.tokenizer, report.options
    template = (tokenizer.chat_template_sha256 or "none")[:12]
    subtitle = (
        f"tokenizer {tokenizer.path} (sha256 {tokenizer.sha256[:12]}, chat template {template}); "
        f"{', '.join(options.text)} ({options.kind}), encode {options.encode}, "
        f"loss on {options.loss}"
        + (f", max {options.max_seq_length} tokens" if options.max_seq_length else "")
        + f"; stop tokens {', '.join(tokenizer.stop_tokens) or 'none'}"
    )
    legend = element(
        "p",
        element("span", "supervised", element("sub", "id"), class_="tok sup"),
        element("span", "not supervised", element("sub", "id"), class_="tok"),
        element("span", "special", element("sub", "id"), class_="tok spc"),
        element("span", "beyond --seq-len", element("sub", "id"), class_="tok cut"),
        element("span", "first divergence", element("sub", "id"), class_="tok div"),
        " · space, ↵ newline, → tab",
        class_="legend",
    )
    shown = (
        [_sample(sample) for sample in samples]
        if samples
        else [Section("No example sampled", paragraph("--sample 0", muted=True), level=3)]
    )
    sections = [
        Section("Checks", _checks(report)),
        Section("Splits", _splits(report)),
        Section(f"Examples ({options.sample} per split, seed {options.seed})", join([legend])),
        *shown,
    ]
    return page(
        f"evalkit tokens: {', '.join(report.splits)}",
        sections,
        subtitle=subtitle,
        lead=_lead(report),
        footer=f"evalkit {report.evalkit_version}; the same inputs give the same page.",
        css=TOKEN_CSS,
    )


def tokens_page(result: TokensResult) -> str:
    """The page of a tokens check (passed to :func:`evalkit.check_tokens` as ``html_page``)."""
    return render_tokens_html(result.report, result.samples)
