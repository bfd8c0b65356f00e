"""The public entry points: :func:`compare` and :func:`gate`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TypeAlias

from evalkit._version import __version__
from evalkit.comparison.breakdown import confusion_change, flipped_examples, format_errors
from evalkit.comparison.decision import decision_record
from evalkit.comparison.options import CompareParams, ComparisonParams, GateParams
from evalkit.comparison.paired import compare_scopes, new_errors, pair_examples, scope_counts
from evalkit.comparison.provenance import compare_provenance
from evalkit.comparison.ranking import decide, rank_candidates, ranking_entries
from evalkit.comparison.results import (
    ScoredResult,
    check_compatible,
    load_result,
    scored_in_memory,
)
from evalkit.comparison.rules import parse_gate_rules
from evalkit.comparison.statistics import CONFIDENCE
from evalkit.comparison.suspects import find_suspects
from evalkit.comparison.test_set import (
    LedgerFindings,
    fresh_test_check,
    gold_split,
    ledger_findings,
    ledger_status,
)
from evalkit.comparison.verdict import CandidateTotals, apply_rules
from evalkit.errors import UsageError
from evalkit.options import takes
from evalkit.records._compare import (
    CandidateReport,
    ComparisonOptions,
    ComparisonReport,
    ContractInfo,
    Decision,
    ResultRef,
)
from evalkit.records._summary import SUMMARY_FILE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from evalkit.comparison.publish import Renderers
    from evalkit.scoring.result import ScoreResult

    ResultLike: TypeAlias = ScoredResult | ScoreResult | str | os.PathLike[str]
    """A result folder, or a result in memory (what ``score`` returns, or one loaded)."""


def _load(result: ResultLike) -> ScoredResult:
    """A result folder read and checked, or a result in memory (loaded, or from ``score``)."""
    from evalkit.io import is_path
    from evalkit.scoring.result import ScoreResult

    if isinstance(result, ScoredResult):
        return result
    if isinstance(result, ScoreResult):
        return scored_in_memory(result)
    if not is_path(result):
        raise UsageError(
            f"expected a result folder or what evalkit.score returns, got {type(result).__name__}"
        )
    return load_result(result)


def _reference(result: ScoredResult, name: str) -> ResultRef:
    return ResultRef(
        name=name,
        path=None if result.in_memory else str(result.path),
        summary_sha256=result.summary_sha256,
        evalkit_version=result.summary.evalkit_version,
    )


def _rare_flags(baseline: ScoredResult, labels: list[str]) -> dict[str, bool]:
    """Rarity as the scorer decided it; for a class it did not list, from the contract."""
    normalized: dict[str, Any] = baseline.summary.contract.normalized
    max_support = (normalized.get("rare") or {}).get("max_support")
    support = baseline.examples["class"].value_counts()
    counts = dict(zip(support["class"].to_list(), support["count"].to_list(), strict=True))
    flags = {}
    for label in labels:
        known = baseline.summary.classes.get(label)
        if known is not None:
            flags[f"class:{label}"] = known.rare
        else:
            flags[f"class:{label}"] = max_support is not None and counts[label] <= max_support
    return flags


def _totals(candidate: ScoredResult) -> CandidateTotals:
    import polars as pl

    row = candidate.examples.select(
        pl.len().alias("n"),
        pl.col("format_valid").sum().alias("format_valid"),
        pl.col("content_correct").sum().alias("content_correct"),
        (pl.col("error") == "missing").sum().alias("missing"),
    ).row(0, named=True)
    return CandidateTotals(**{key: int(value or 0) for key, value in row.items()})


def _correct_fields(baseline: ScoredResult) -> list[str] | None:
    correct = baseline.summary.contract.normalized.get("correct")
    return [str(field) for field in correct] if isinstance(correct, list) else None


def _compare_one(
    baseline: ScoredResult,
    candidate: ScoredResult,
    name: str,
    options: ComparisonParams,
    findings: LedgerFindings,
) -> CandidateReport:
    check_compatible(baseline, candidate)
    section, ablation = compare_provenance(
        baseline, candidate, list(options.factors), options.allow_base_change
    )
    seed, resamples = options.seed, options.resamples
    summary = baseline.summary
    rules = parse_gate_rules(summary.contract.normalized, baseline.path / SUMMARY_FILE)
    paired = pair_examples(baseline, candidate, _correct_fields(baseline))
    counts = scope_counts(paired)
    labels = [scope.removeprefix("class:") for scope in counts["classes"]["scope"].to_list()]
    rare = _rare_flags(baseline, labels)
    overall = compare_scopes(counts["overall"], {}, seed, resamples)[0]
    classes = compare_scopes(counts["classes"], rare, seed, resamples)
    slices = compare_scopes(counts["slices"], {}, seed, resamples)
    checks = apply_rules(rules, _totals(candidate), overall, classes, slices) + ablation
    test_set = ledger_status(findings, [baseline, candidate], overall)
    if rules.require_fresh_test:
        checks.append(fresh_test_check(test_set))
    if rules.require_servable is not None:
        from evalkit.comparison.servable import servable_check

        checks.append(servable_check(candidate, rules.require_servable))
    failures = [check for check in checks if not check.passed]
    return CandidateReport(
        evalkit_version=__version__,
        verdict="fail" if failures else "pass",
        baseline=_reference(baseline, baseline.name),
        candidate=_reference(candidate, name),
        contract=ContractInfo(
            name=summary.contract.name,
            version=summary.contract.version,
            fingerprint=summary.contract.fingerprint,
        ),
        gold_sha256=summary.gold.sha256,
        options=_recorded(options),
        rules=rules,
        pairing=paired.pairing,
        failures=failures,
        checks=checks,
        overall=overall,
        classes={scope.scope.removeprefix("class:"): scope for scope in classes},
        slices={scope.scope.removeprefix("slice:"): scope for scope in slices},
        new_errors=new_errors(paired),
        provenance=section,
        test_set=test_set,
        format_errors=format_errors(paired),
        confusion=confusion_change(paired),
        flips=flipped_examples(paired, rare),
        warnings=[
            f"slice {scope.scope.removeprefix('slice:')!r} holds no paired example, so its "
            "figures are empty and its rules judge nothing; check the contract's slices"
            for scope in slices
            if scope.n == 0
        ],
    )


def _unique_names(results: list[ScoredResult]) -> list[str]:
    """Candidate names, told apart by folder (and then by position) when two are alike."""
    names = [result.name for result in results]
    if len(set(names)) < len(names):
        names = [f"{result.name} ({result.path})" for result in results]
    if len(set(names)) < len(names):
        names = [f"{name} #{position}" for position, name in enumerate(names, start=1)]
    return names


def _recorded(options: ComparisonParams) -> ComparisonOptions:
    """What the report records of its options: the statistics its intervals rest on."""
    return ComparisonOptions(seed=options.seed, resamples=options.resamples, confidence=CONFIDENCE)


def _with_record(
    report: CandidateReport, ranked: list[CandidateReport], decision: Decision,
    baseline: ScoredResult, by_name: dict[str, ScoredResult],
) -> Decision:  # fmt: skip
    chosen = decision.candidate
    result = by_name[chosen] if chosen is not None else baseline
    assert report.test_set is not None
    return decision_record(
        decision,
        ranked,
        result,
        chosen or baseline.name,
        gold_split(baseline, report.pairing.paired),
        report.test_set,
    )


@takes(GateParams)
def gate(
    baseline: ResultLike,
    candidate: ResultLike,
    params: GateParams | None = None,
    /,
    *,
    junit: str | os.PathLike[str] | None = None,
    markdown: str | os.PathLike[str] | None = None,
    html: str | os.PathLike[str] | None = None,
    json: str | os.PathLike[str] | None = None,
    step_summary: str | os.PathLike[str] | None = None,
    render: Renderers | None = None,
    force: bool = False,
    **options: Any,
) -> CandidateReport:
    """Compare a candidate with the baseline example by example and judge the contract's gate.

    Both are result folders written by ``evalkit score`` (or already loaded
    :class:`ScoredResult` objects). Raises :class:`~evalkit.errors.IncompatibleResults`
    when they were scored under different contracts or gold files, and
    :class:`~evalkit.errors.DifferentBases` when their bases differ (unless
    ``allow_base_change``). ``factors`` names the settings an ablation
    studies (``r``): any other difference of the adapter cards fails as
    ``confounded_ablation``. ``ledger`` overrides the test-set ledger to read.
    ``seed`` and ``resamples`` set the paired bootstrap. The options are
    ``params`` (a :class:`~evalkit.comparison.options.GateParams`, the
    command's options) or the same fields as keywords.
    The report's ``verdict`` is ``fail`` when any rule fails in any scope.

    ``junit``, ``markdown``, ``html`` and ``json`` write the report there too,
    each as ``render`` (parameter -> a function of the report giving its
    text; ``evalkit.report.comparison_files.GATE_FILES`` is the command's)
    renders it, as ``evalkit gate`` writes them (which is this call):
    atomically, never over an input (the results, what they record, the
    ledger read), and over existing files only with ``force``, checked before
    the results are read. ``step_summary`` (a CI step summary file) gets the
    Markdown report appended; a refusal there is an
    :class:`~evalkit.errors.EvalkitWarning`, not an error.
    """
    from evalkit.comparison.publish import append_step_summary, declared, renderers, write_files

    given = GateParams.build(params, options)
    outputs = {"junit": junit, "markdown": markdown, "html": html, "json": json}
    chosen = renderers(render, outputs, step_summary=step_summary)
    if not any(outputs.values()):
        report = _gate(baseline, candidate, given)
    else:
        files = declared([baseline, candidate], given.ledger, outputs, force=force)
        report = _gate(baseline, candidate, given)
        if report.test_set is not None:
            files.reads(report.test_set.ledger)  # the ledger the verdict read
        files.check()
        write_files(report, outputs, chosen)
    if step_summary:
        append_step_summary(step_summary, chosen["markdown"](report))
    return report


def _gate(baseline: ResultLike, candidate: ResultLike, given: GateParams) -> CandidateReport:
    """The gate of ``candidate`` against ``baseline`` under ``given`` (see :func:`gate`)."""
    base, cand = _load(baseline), _load(candidate)
    check_compatible(base, cand)  # before the ledger: its state is the gold file's
    findings = ledger_findings([base, cand], given.ledger)
    report = _compare_one(base, cand, cand.name, given, findings)
    decision = _with_record(report, [report], decide([report], 0.0), base, {cand.name: cand})
    return report.model_copy(update={"decision": decision})


@takes(CompareParams)
def compare(
    baseline: ResultLike,
    *candidates: ResultLike | CompareParams,
    params: CompareParams | None = None,
    out: str | os.PathLike[str] | None = None,
    json: str | os.PathLike[str] | None = None,
    render: Renderers | None = None,
    force: bool = False,
    **options: Any,
) -> ComparisonReport:
    """Compare one or more candidates with the baseline, rank them and decide.

    The decision adopts the best candidate that passes the gate, provided
    its overall content-accuracy gain is greater than ``min_gain``;
    otherwise it says that no candidate passes, or that none gains enough,
    and the report lists every candidate's known regressions. ``factors``,
    ``allow_base_change`` and ``ledger`` work as for :func:`gate`.

    The report also lists suspect gold labels: items whose gold class the
    baseline and every candidate (at least ``suspect_min_agree`` of them;
    invalid outputs abstain) contradict with the same format-valid answer,
    with the first words of ``text`` of the gold file (default
    ``text``, or the contract's conversation column).

    The options are ``params`` (a :class:`~evalkit.comparison.options.CompareParams`,
    the command's options; given last among the results, or as ``params=``)
    or the same fields as keywords.

    ``out`` writes a folder of the report's files, and ``json`` the report
    alone, each file as ``render`` (file name -> a function of the report
    giving its text; ``evalkit.report.comparison_files.COMPARE_FILES`` is the
    command's: report.json, report.md, report.html, junit.xml; ``json`` is
    its ``report.json``) renders it, as ``evalkit compare`` writes them (which
    is this call): atomically, never over an input (the results, what they
    record, the ledgers read), and over an existing file or folder (one
    holding ``report.json``) only with ``force``, checked before the results
    are read.
    """
    from evalkit.comparison.publish import (
        COMPARE_MARKER,
        declared,
        folder_renderers,
        write_files,
        write_folder,
    )

    if candidates and isinstance(candidates[-1], CompareParams):
        if params is not None:
            raise TypeError("compare() got two CompareParams: pass one")
        params, candidates = candidates[-1], candidates[:-1]
    given = CompareParams.build(params, options)
    if out is None and json is None:
        return _compare(baseline, candidates, given)
    chosen = folder_renderers(render, out=out, json=json)
    outputs = {"out": out, "json": json}
    results = [baseline, *candidates]
    files = declared(results, given.ledger, outputs, force=force, marker={"out": COMPARE_MARKER})
    report = _compare(baseline, candidates, given)
    for candidate in report.candidates:
        if candidate.test_set is not None:
            files.reads(candidate.test_set.ledger)  # the ledger the verdicts read
    files.check()
    if out is not None:
        write_folder(report, out, chosen, force=force, inputs=files.inputs)
    write_files(report, {"json": json}, {"json": chosen[COMPARE_MARKER]})
    return report


def _compare(
    baseline: ResultLike, candidates: Sequence[object], given: CompareParams
) -> ComparisonReport:
    """The comparison of ``candidates`` with ``baseline`` under ``given`` (see :func:`compare`)."""
    if not candidates:
        raise UsageError("no candidate given; pass at least one result folder to compare")
    base = _load(baseline)
    loaded = [_load(candidate) for candidate in candidates]  # type: ignore[arg-type]
    names = _unique_names(loaded)
    for result in loaded:
        check_compatible(base, result)  # before the ledger: its state is the gold file's
    findings = ledger_findings([base, *loaded], given.ledger)
    reports = [
        _compare_one(base, result, name, given, findings)
        for result, name in zip(loaded, names, strict=True)
    ]
    ranked = rank_candidates(reports)
    top = ranked[0]
    by_name = dict(zip(names, loaded, strict=True))
    decision = _with_record(top, ranked, decide(ranked, given.min_gain), base, by_name)
    suspects, suspect_check = find_suspects(
        [base, *loaded],
        [base.name, *names],
        min_agree=given.suspect_min_agree,
        text_column=given.text,
    )
    return ComparisonReport(
        evalkit_version=__version__,
        baseline=top.baseline,
        contract=top.contract,
        gold_sha256=top.gold_sha256,
        options=top.options,
        decision=decision,
        ranking=ranking_entries(ranked),
        candidate=top.candidate.name,
        verdict=top.verdict,
        failures=top.failures,
        overall=top.overall,
        classes=top.classes,
        candidates=ranked,
        suspect_labels=suspects,
        suspect_label_check=suspect_check,
    )
