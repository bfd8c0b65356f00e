"""``evalkit tokens --html``: the checks, the figures, and sampled examples token by token.

One self-contained file (inline CSS, no script, no font or image from the
network), byte-identical for the same inputs. Each sampled example shows
its training sequence and its inference prompt side by side, one box per
token with its id under it: supervised tokens have a tinted box *and* a
thick underline, special tokens are bold, tokens beyond --max-seq-length
are struck through, and the first token where the prompt leaves the
training sequence is outlined in both columns (meaning never rests on
colour alone). Whitespace is drawn (``·`` space, ``↵`` newline, ``→`` tab).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from evalkit.tokens.models import Quantiles, TokenCounts, TokensReport
from evalkit.tokens.samples import Sample, ShownToken

COUNTED = ("prompt", "answer", "total")
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1b1b1b;
margin:2rem auto;max-width:1400px;padding:0 1rem}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}h3{font-size:1rem;margin:1.2rem 0 .4rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;
text-align:left;vertical-align:top}th{background:#f3f3f3}td.n{text-align:right}
.s-pass{color:#006d2c}.s-warn{color:#8a5a00;font-weight:600}.s-fail{color:#b00020;font-weight:700}
.s-skip{color:#666}.verdict{padding:.6rem .8rem;border:2px solid;display:inline-block}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
.seq{font:12px/1.2 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;border:1px solid #ddd;
padding:.4rem;background:#fcfcfc}
.tok{display:inline-flex;flex-direction:column;align-items:center;margin:1px;padding:1px 2px;
border:1px solid #e2e2e2;border-bottom-width:3px;white-space:pre}
.tok sub{font-size:9px;color:#777}
.sup{background:#dbe9ff;border-bottom-color:#0b57d0}
.spc{font-weight:700;color:#6a1b9a}
.cut{text-decoration:line-through;opacity:.55}
.div{outline:3px solid #b00020;outline-offset:1px}
.legend span{margin-right:1rem}
"""


def _visible(text: str) -> str:
    return text.replace(" ", "·").replace("\t", "→").replace("\n", "↵")


def _token(token: ShownToken, diverges: bool) -> str:
    classes = ["tok"]
    if token.supervised:
        classes.append("sup")
    if token.special:
        classes.append("spc")
    if not token.kept:
        classes.append("cut")
    if diverges:
        classes.append("div")
    title = f"id {token.id}" + (", supervised" if token.supervised else "")
    body = f"{escape(_visible(token.text))}<sub>{token.id}</sub>"
    box = f'<span class="{" ".join(classes)}" title="{escape(title)}">{body}</span>'
    return box + ("<br>" if token.text.endswith("\n") else "")


def _sequence(tokens: Sequence[ShownToken], divergence: int | None) -> str:
    return "".join(_token(t, index == divergence) for index, t in enumerate(tokens))


def _sample(sample: Sample) -> str:
    supervised = sum(token.supervised for token in sample.train)
    head = (
        f"<h3>{escape(sample.split)}: {escape(sample.id)} "
        f"({len(sample.train)} tokens, {supervised} supervised)</h3>"
    )
    sequence = _sequence(sample.train, sample.divergence)
    train = f'<div><b>training sequence</b><div class="seq">{sequence}</div></div>'
    if sample.prompt is None:
        prompt = "<div><b>inference prompt</b><p>none: this example has no prompt</p></div>"
    else:
        where = (
            "a token prefix of the training sequence"
            if sample.divergence is None
            else f"leaves the training sequence at token {sample.divergence} (outlined)"
        )
        prompt = (
            f"<div><b>inference prompt</b> ({len(sample.prompt)} tokens, {where})"
            f'<div class="seq">{_sequence(sample.prompt, sample.divergence)}</div></div>'
        )
    return f'{head}<div class="pair">{train}{prompt}</div>'


def _checks(report: TokensReport) -> str:
    rows = []
    for check in report.checks:
        examples = ", ".join(f"{e.split}:{e.id}" for e in check.examples)
        rows.append(
            f'<tr><td>{check.name}</td><td class="s-{check.status}">{check.status.upper()}</td>'
            f'<td class="n">{check.count:,}</td><td>{escape(check.detail)}</td>'
            f"<td>{escape(examples)}</td></tr>"
        )
    head = "<tr><th>check</th><th>status</th><th>count</th><th>detail</th><th>examples</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"


def _spread(tokens: TokenCounts | None, kind: str) -> str:
    if tokens is None:
        return "-"
    q: Quantiles = getattr(tokens, kind)
    return f"{q.p50:.0f} / {q.p95:.0f} / {q.p99:.0f} / {q.max}"


def _splits(report: TokensReport) -> str:
    rows = []
    for name, split in report.splits.items():
        tokens = split.tokens

        ratio = f"{split.supervised_ratio:.1%}" if split.supervised_ratio is not None else "-"
        cut = split.truncation
        truncation = (
            f"{cut.over_limit:,} over {cut.max_seq_length}; {cut.answer_cut_partly:,} cut partly, "
            f"{cut.answer_cut_fully:,} fully, {cut.eos_lost:,} lost the stop token"
            if cut
            else "-"
        )
        spreads = "".join(f"<td>{_spread(tokens, kind)}</td>" for kind in COUNTED)
        rows.append(
            f'<tr><td>{escape(name)}</td><td class="n">{split.n:,}</td>{spreads}'
            f"<td>{ratio}</td><td>{truncation}</td></tr>"
        )
    head = (
        "<tr><th>split</th><th>examples</th><th>prompt p50/p95/p99/max</th>"
        "<th>answer</th><th>total</th><th>supervised</th><th>truncation</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


def render_tokens_html(report: TokensReport, samples: Sequence[Sample]) -> str:
    """The whole page as one string."""
    tokenizer, options = report.tokenizer, report.options
    verdict_class = f"s-{report.status}"
    legend = (
        '<p class="legend"><span class="tok sup">supervised<sub>id</sub></span>'
        '<span class="tok">not supervised<sub>id</sub></span>'
        '<span class="tok spc">special<sub>id</sub></span>'
        '<span class="tok cut">beyond --max-seq-length<sub>id</sub></span>'
        '<span class="tok div">first divergence<sub>id</sub></span>'
        " · space, ↵ newline, → tab</p>"
    )
    shown = "".join(_sample(sample) for sample in samples) or "<p>no examples sampled</p>"
    template = tokenizer.chat_template_sha256 or "none"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        "<title>evalkit tokens</title>"
        f"<style>{CSS}</style></head><body>"
        "<h1>evalkit tokens: the data as the model will see it</h1>"
        f'<p class="verdict {verdict_class}">{report.status.upper()}</p>'
        f"<p>tokenizer <code>{escape(tokenizer.path)}</code> (sha256 {tokenizer.sha256[:12]}…), "
        f"chat template sha256 {template[:12]}; columns {escape(', '.join(options.text))} "
        f"({options.kind}), encode {options.encode}, loss on {options.loss}"
        + (f", max {options.max_seq_length} tokens" if options.max_seq_length else "")
        + f"; stop tokens {escape(', '.join(tokenizer.stop_tokens) or 'none')}</p>"
        f"<h2>Checks</h2>{_checks(report)}"
        f"<h2>Splits</h2>{_splits(report)}"
        f"<h2>Examples ({options.sample} per split, seed {options.seed})</h2>{legend}{shown}"
        "</body></html>\n"
    )
