"""The typed results of a comparison: what ``report.json`` persists.

Every field carries a docstring because these models are the file format: a
user reading ``report.json`` (or its JSON Schema) should not need the code.
A new version may add fields, never rename or remove one; an incompatible
change bumps ``format_version``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalkit.records._base import Persisted
from evalkit.records._compare_records import (
    GoldSplit,
    LedgerStatus,
    ProvenanceComparison,
    ReloadNeeds,
)
from evalkit.records._gate import GateRules
from evalkit.records._suspects import SuspectLabel, SuspectLabelCheck

REPORT_FORMAT_VERSION = 1

Interval = tuple[float, float]


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class ScopeComparison(_Model):
    """Paired statistics of one scope: overall, one class or one slice."""

    scope: str
    """``overall``, ``class:<label>`` or ``slice:<name>``."""
    n: int
    """Paired examples in the scope (present in both results)."""
    rare: bool
    """For a class: at most ``rare.max_support`` gold items (judged by threshold alone)."""
    baseline_correct: int
    """Examples the baseline got content-correct."""
    candidate_correct: int
    """Examples the candidate got content-correct."""
    baseline_accuracy: float | None
    """Baseline content accuracy (null when the scope is empty)."""
    candidate_accuracy: float | None
    """Candidate content accuracy (null when the scope is empty)."""
    baseline_accuracy_ci: Interval | None
    """Wilson 95% interval of the baseline accuracy."""
    candidate_accuracy_ci: Interval | None
    """Wilson 95% interval of the candidate accuracy."""
    delta: float | None
    """candidate_accuracy - baseline_accuracy (negative is a drop)."""
    delta_ci: Interval | None
    """Seeded paired-bootstrap 95% percentile interval of ``delta``."""
    negative_flips: int
    """Examples the baseline got right and the candidate gets wrong."""
    positive_flips: int
    """Examples the baseline got wrong and the candidate gets right."""
    negative_flip_rate: float | None
    """negative_flips / n: the share of examples that regressed."""
    mcnemar_p: float
    """Two-sided exact McNemar p-value of the accuracy change (1 when nothing flips)."""
    holm_p: float
    """``mcnemar_p`` Holm-adjusted across the scope's family (all classes, all slices)."""
    negative_flip_ids: list[str]
    """Ids of the first negative flips, in id order (at most 10)."""
    baseline_format_validity: float | None
    """Baseline format validity."""
    candidate_format_validity: float | None
    """Candidate format validity."""
    format_delta: float | None
    """candidate_format_validity - baseline_format_validity."""
    format_delta_ci: Interval | None
    """Seeded paired-bootstrap 95% percentile interval of ``format_delta``."""
    format_negative_flips: int
    """Examples valid in the baseline and invalid in the candidate."""
    format_positive_flips: int
    """Examples invalid in the baseline and valid in the candidate."""
    format_mcnemar_p: float
    """Two-sided exact McNemar p-value of the format-validity change."""
    format_negative_flip_ids: list[str]
    """Ids of the first examples valid in the baseline and invalid in the candidate (at most 10)."""


class RuleCheck(_Model):
    """One gate rule applied to one scope: a JUnit test case."""

    rule: str
    """The gate key, e.g. ``max_rare_class_drop`` or ``min_format_validity``."""
    scope: str
    """``overall``, ``class:<label>`` or ``slice:<name>``."""
    passed: bool
    """Whether the candidate satisfies the rule in this scope."""
    baseline: float | None
    """The baseline's value (null for absolute rules, which judge the candidate alone)."""
    candidate: float | None
    """The candidate's value (null when the scope has no examples)."""
    threshold: float
    """The rule's threshold: a minimum, a maximum count, or the largest allowed drop."""
    drop: float | None
    """baseline - candidate, for rules against the baseline."""
    p_value: float | None
    """The p-value significance is judged on (Holm-adjusted for classes), when it applies."""
    significance: float | None
    """The significance level, when it applies to this rule and scope."""
    reason: str
    """One line saying why the check passed or failed."""
    negative_flip_ids: list[str]
    """Example ids that regressed in this scope (at most 10)."""


class ResultRef(_Model):
    """Which result folder a side of the comparison came from."""

    name: str
    """The result's name (``evalkit score --name``)."""
    path: str | None
    """The folder as given (null for a result compared in memory, as ``evalkit.score``
    returned it)."""
    summary_sha256: str
    """sha256 of its ``summary.json`` (for a result in memory: of the bytes it would write)."""
    evalkit_version: str
    """The evalkit version that scored it."""


class ContractInfo(_Model):
    """The contract both results were scored under."""

    name: str
    """Contract name."""
    version: int
    """Contract version."""
    fingerprint: str
    """sha256 of the normalised contract and evaluator semantics."""


class Pairing(_Model):
    """How the two results' examples paired up by id."""

    paired: int
    """Ids present in both results: the examples every statistic is computed on."""
    only_in_baseline: int
    """Ids the baseline has and the candidate lacks."""
    only_in_candidate: int
    """Ids the candidate has and the baseline lacks."""
    only_in_baseline_ids: list[str]
    """The first of those ids (at most 10)."""
    only_in_candidate_ids: list[str]
    """The first of those ids (at most 10)."""


class NewError(_Model):
    """A kind of error the candidate makes on examples where the baseline did not."""

    category: str
    """The candidate's error category, or ``mismatch:<fields>`` for a wrong valid output."""
    count: int
    """Examples with this new error."""
    example_id: str
    """One example (the smallest id)."""
    baseline_category: str | None
    """What the baseline did on that example (null: it was right)."""
    gold_class: str | None
    """Gold class of the example."""
    predicted_class: str | None
    """The class the candidate predicted (null when its output was invalid)."""
    detail: str | None
    """The scorer's one-line reason for the candidate's error, if any."""


class FormatErrorCount(_Model):
    """One format-error category: how often each side makes it, and one example."""

    category: str
    """The error category (``missing``, ``no_json``, ``schema:<keyword>``, …)."""
    baseline: int
    """Paired examples with this error in the baseline."""
    candidate: int
    """Paired examples with this error in the candidate."""
    example_id: str
    """The candidate's smallest id with this error (the baseline's when the candidate has none)."""
    example_side: Literal["baseline", "candidate"]
    """Whose output ``example_id`` shows the error in."""
    detail: str | None
    """The scorer's one-line reason for that example's error."""


class ConfusionChange(_Model):
    """One cell of the confusion matrix in both results."""

    gold: str
    """The gold class."""
    predicted: str | None
    """The predicted class; null when the output predicted none (missing or invalid)."""
    baseline: int
    """Paired examples of ``gold`` the baseline predicted as ``predicted``."""
    candidate: int
    """Paired examples of ``gold`` the candidate predicted as ``predicted``."""
    change: int
    """candidate - baseline."""


class ConfusionComparison(_Model):
    """Gold class against predicted class for both sides, over the paired examples, sparsely."""

    labels: list[str]
    """Every class that is a gold class or a predicted class on either side, sorted."""
    cells: list[ConfusionChange]
    """The cells non-empty on either side, by gold class, then predicted class (null last)."""


class FlippedExample(_Model):
    """An example whose content correctness changed between baseline and candidate."""

    id: str
    """The example's id."""
    direction: Literal["negative", "positive"]
    """``negative``: the baseline was right, the candidate is wrong; ``positive``: the reverse."""
    gold_class: str | None
    """Gold class of the example."""
    rare: bool
    """Whether that class is rare."""
    baseline_category: str | None
    """The baseline's error category, ``mismatch:<fields>``, or null when it was right."""
    candidate_category: str | None
    """The candidate's error category, ``mismatch:<fields>``, or null when it is right."""
    baseline_predicted_class: str | None
    """The class the baseline predicted (null when its output was invalid)."""
    candidate_predicted_class: str | None
    """The class the candidate predicted (null when its output was invalid)."""


class ComparisonOptions(_Model):
    """Options that change the numbers: recorded so a report can be reproduced."""

    seed: int
    """Seed of the paired bootstrap."""
    resamples: int
    """Bootstrap resamples per scope."""
    confidence: float
    """Confidence level of every interval."""


class Decision(_Model):
    """Which candidate, if any, to adopt."""

    outcome: Literal["adopt", "no_candidate_passes", "no_sufficient_gain"]
    """``adopt`` names a candidate; the others keep the baseline."""
    candidate: str | None
    """The candidate to adopt, when ``outcome`` is ``adopt``."""
    reason: str
    """One sentence for people."""
    known_regressions: dict[str, list[str]] = Field(default_factory=dict)
    """Per candidate, its failed checks as ``rule@scope``."""
    test_split: GoldSplit | None = None
    """The test set the decision rests on: its file and the groups it covers."""
    test_set: LedgerStatus | None = None
    """How often that test set was looked at."""
    reload: ReloadNeeds | None = None
    """What reloading the adopted candidate (or the kept baseline) needs."""


class CandidateReport(_Model):
    """One candidate against the baseline: statistics, checks and verdict."""

    format_version: int = REPORT_FORMAT_VERSION
    """Bumped on any incompatible change of this format."""
    evalkit_version: str
    """The evalkit version that compared."""
    verdict: Literal["pass", "fail"]
    """``fail`` when any rule fails in any scope."""
    baseline: ResultRef
    """The baseline result."""
    candidate: ResultRef
    """The candidate result."""
    contract: ContractInfo
    """The contract both were scored under."""
    gold_sha256: str
    """sha256 of the gold file both were scored against."""
    options: ComparisonOptions
    """Seed, resamples and confidence."""
    rules: GateRules
    """The gate rules applied (from the contract)."""
    pairing: Pairing
    """How the examples paired up."""
    failures: list[RuleCheck]
    """The failed checks, in check order."""
    checks: list[RuleCheck]
    """Every rule applied to every scope it covers."""
    overall: ScopeComparison
    """All paired examples."""
    classes: dict[str, ScopeComparison]
    """Per gold class, by label."""
    slices: dict[str, ScopeComparison]
    """Per contract slice, by name."""
    new_errors: list[NewError]
    """Errors the candidate makes where the baseline did not, by category."""
    format_errors: list[FormatErrorCount] = Field(default_factory=list)
    """Format-error categories of either side, most frequent in the candidate first."""
    confusion: ConfusionComparison | None = None
    """Both sides' confusion matrices (null when the results have no gold class)."""
    flips: list[FlippedExample] = Field(default_factory=list)
    """Some flipped examples to read: negative ones first, a few per class (ids in order)."""
    provenance: ProvenanceComparison | None = None
    """Bases and adapter settings of both sides (null when neither recorded any)."""
    test_set: LedgerStatus | None = None
    """The ledger's state of the test set."""
    decision: Decision | None = None
    """``evalkit gate``'s decision record (``compare`` has one for all candidates)."""
    warnings: list[str] = Field(default=[], exclude_if=lambda warnings: not warnings)
    """What was compared but deserves a look: a slice that holds no paired example (its
    rules judge nothing). The key is written only when there is a warning."""


class RankedCandidate(_Model):
    """A candidate's place in the ranking."""

    rank: int
    """1 is best: passing candidates first, then by accuracy gain."""
    candidate: str
    """The candidate's name."""
    verdict: Literal["pass", "fail"]
    """Its gate verdict."""
    delta: float | None
    """Its overall content-accuracy change against the baseline."""
    delta_ci: Interval | None
    """Paired-bootstrap 95% interval of ``delta``."""
    mcnemar_p: float
    """Exact McNemar p-value of ``delta``."""
    negative_flips: int
    """Overall negative flips."""
    positive_flips: int
    """Overall positive flips."""
    regressions: list[str]
    """Failed checks as ``rule@scope``: the known regressions."""


class ComparisonReport(_Model):
    """A baseline against one or more candidates, ranked, with a decision.

    ``verdict``, ``failures``, ``overall`` and ``classes`` repeat those of the
    top-ranked candidate, so that a single-candidate ``report.json`` reads
    the same as the report of ``evalkit gate``.
    """

    format_version: int = REPORT_FORMAT_VERSION
    """Bumped on any incompatible change of this format."""
    evalkit_version: str
    """The evalkit version that compared."""
    baseline: ResultRef
    """The baseline result."""
    contract: ContractInfo
    """The contract every result was scored under."""
    gold_sha256: str
    """sha256 of the gold file every result was scored against."""
    options: ComparisonOptions
    """Seed, resamples and confidence."""
    decision: Decision
    """The candidate to adopt, or why none."""
    ranking: list[RankedCandidate]
    """Every candidate, best first."""
    candidate: str
    """Name of the top-ranked candidate, which the next four fields describe."""
    verdict: Literal["pass", "fail"]
    """Gate verdict of the top-ranked candidate."""
    failures: list[RuleCheck]
    """Failed checks of the top-ranked candidate."""
    overall: ScopeComparison
    """Overall statistics of the top-ranked candidate."""
    classes: dict[str, ScopeComparison]
    """Per-class statistics of the top-ranked candidate."""
    candidates: list[CandidateReport]
    """The full report of every candidate, in ranking order."""
    suspect_labels: list[SuspectLabel] = Field(default_factory=list)
    """Gold items whose class every result contradicts with the same format-valid answer,
    most agreeing results first: labels to read again (a hint, never a verdict)."""
    suspect_label_check: SuspectLabelCheck | None = None
    """How the suspects were looked for, and the counts per class."""
