"""The gate's provenance checks: one base, and an ablation that changes only its factor.

Two results are comparable only on the same base: an adapter retrained on a
moved ``main`` of its base, or on a quantized copy, is another experiment.
When both sides name their base, a different id, revision or quantization
is refused (``--allow-base-change`` compares anyway and says so); a value
one side does not know (null) is listed, not refused.

Every setting of the cards' ``base``, ``lora`` and ``training`` blocks that
differs is listed; hashes and parameter counts identify artifacts and are
not settings, and training bookkeeping (output folders, logging, hub
pushes) changes nothing. ``--factor KEY`` declares what the comparison
studies: any other difference, except what follows from the factor, is a
``confounded_ablation``. For ``r`` both protocols of the literature are
accepted and named: alpha fixed (the scaling alpha/r changes with r) or
alpha/r fixed (alpha changes with r, the scaling does not).
"""

from __future__ import annotations

import json
from typing import Any

from evalkit.comparison.results import ScoredResult
from evalkit.errors import DifferentBases, ParameterError
from evalkit.records._compare import RuleCheck
from evalkit.records._compare_records import ProvenanceComparison, SettingDifference

BASE_KEYS = ("id", "revision", "quantization")
# Training keys that record where and how a run logged, not what it trained.
BOOKKEEPING = {
    "output_dir", "logging_dir", "run_name", "overwrite_output_dir", "resume_from_checkpoint",
    "report_to", "disable_tqdm", "local_rank", "dataloader_num_workers", "dataloader_pin_memory",
    "dataloader_persistent_workers", "dataloader_prefetch_factor", "_n_gpu", "ddp_backend",
}  # fmt: skip
BOOKKEEPING_PREFIXES = ("hub_", "push_to_hub", "logging_", "save_")
# What a factor's change carries along: keys whose difference it explains.
FOLLOWS = {
    "lora.r": ("lora.scaling",),
    "lora.lora_alpha": ("lora.scaling",),
    "lora.use_rslora": ("lora.scaling", "lora.scaling_rule"),
}
RULE = "confounded_ablation"


def _setting(block: str, key: str) -> bool:
    if block != "training":
        return True
    return key not in BOOKKEEPING and not key.startswith(BOOKKEEPING_PREFIXES)


def settings_of(result: ScoredResult) -> dict[str, dict[str, Any]]:
    """The blocks of settings a result records: ``base`` always, ``lora``/``training`` by card."""
    summary, card = result.summary, result.summary.card
    blocks: dict[str, dict[str, Any]] = {}
    base = summary.base or (card.base if card is not None else None)
    if base is not None:
        blocks["base"] = {key: getattr(base, key) for key in BASE_KEYS}
    if card is None:
        return blocks
    settings = {
        "lora": card.lora.model_dump(mode="json") if card.lora is not None else None,
        "training": card.training,
    }
    for block, values in settings.items():
        if values is not None:
            blocks[block] = {k: v for k, v in values.items() if _setting(block, k)}
    return blocks


def _weights(result: ScoredResult) -> str | None:
    card = result.summary.card
    return card.weights_sha256 if card is not None else None


def _differences(
    baseline: dict[str, dict[str, Any]], candidate: dict[str, dict[str, Any]]
) -> dict[str, tuple[Any, Any]]:
    found = {}
    for block in ("base", "lora", "training"):
        if block not in baseline or block not in candidate:
            continue
        left, right = baseline[block], candidate[block]
        for key in sorted(set(left) | set(right)):
            if left.get(key) != right.get(key):
                found[f"{block}.{key}"] = (left.get(key), right.get(key))
    return found


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


NOT_QUANTIZED = "none"


def _known_base(result: ScoredResult) -> dict[str, Any] | None:
    """The base keys a result knows; a card checked against its base folder knows "none".

    A card's ``quantization`` is null both when its base was not quantized
    and when the card never saw the base; only with ``--base`` (the card then
    records the base's ``config_sha256``) does null mean "not quantized", a
    value to compare like any other: a QLoRA adapter against a LoRA one.
    """
    base = settings_of(result).get("base")
    if not base:
        return None
    known = dict(base)
    card = result.summary.card
    checked = card is not None and card.base.config_sha256 is not None
    if known.get("quantization") is None and checked:
        known["quantization"] = NOT_QUANTIZED
    return known


def check_same_base(
    baseline: ScoredResult, candidate: ScoredResult, allow_change: bool
) -> list[str]:
    """The base keys that differ; refused (exit 2) unless ``allow_change``."""
    left = _known_base(baseline)
    right = _known_base(candidate)
    if not left or not right or not left.get("id") or not right.get("id"):
        return []
    changed = [
        key
        for key in BASE_KEYS
        if left.get(key) is not None and right.get(key) is not None and left[key] != right[key]
    ]
    if changed and not allow_change:

        def side(base: dict[str, Any]) -> str:
            text = f"{base['id']} @ {base.get('revision') or '(no revision)'}"
            quantization = base.get("quantization")
            if quantization == NOT_QUANTIZED:
                return text + " (not quantized)"
            return text + (f" ({quantization})" if quantization else "")

        raise DifferentBases(
            f"{baseline.path} and {candidate.path} were produced on different bases "
            f"({', '.join(changed)}): {side(left)} vs {side(right)}; compare adapters of one "
            "base, or pass {allow_base_change} to compare anyway",
            refs={"allow_base_change": True},
        )
    return changed


def resolve_factors(
    factors: list[str], baseline: ScoredResult, candidate: ScoredResult
) -> list[str]:
    """Full ``block.key`` names of ``--factor`` values (``r`` is ``lora.r``)."""
    if not factors:
        return []
    for side, result in (("baseline", baseline), ("candidate", candidate)):
        if result.summary.card is None:
            raise ParameterError(
                "factors",
                f"needs the adapter card of both sides, but the {side} {result.path} "
                "has none; score it again with its adapter card or its adapter folder",
            )
    known = {
        f"{block}.{key}"
        for result in (baseline, candidate)
        for block, values in settings_of(result).items()
        for key in values
    }
    resolved = []
    for factor in factors:
        matches = (
            [factor] if factor in known else sorted(k for k in known if k.endswith(f".{factor}"))
        )
        if not matches:
            listing = ", ".join(sorted(known)[:30])
            raise ParameterError(
                "factors", f"{factor}: no such setting in the cards; they have: {listing}"
            )
        resolved.append(matches[0])
    return list(dict.fromkeys(resolved))


def _r_protocol(
    differences: dict[str, tuple[Any, Any]], lora: tuple[dict, dict]
) -> tuple[str | None, bool]:
    """(protocol name, whether ``lora_alpha`` follows from r) when r is the factor."""
    if "lora.r" not in differences:
        return None, False
    rule = "alpha/sqrt(r)" if lora[0].get("use_rslora") else "alpha/r"
    if "lora.lora_alpha" not in differences:
        return f"fixed lora_alpha (the scaling {rule} changes with r)", False
    if "lora.scaling" not in differences:
        return f"fixed lora_{rule} (lora_alpha changes with r, the scaling does not)", True
    return None, False


def compare_provenance(
    baseline: ScoredResult,
    candidate: ScoredResult,
    factors: list[str],
    allow_base_change: bool,
) -> tuple[ProvenanceComparison | None, list[RuleCheck]]:
    """The provenance section of a candidate's report and its ``confounded_ablation`` checks."""
    changed = check_same_base(baseline, candidate, allow_base_change)
    full_factors = resolve_factors(factors, baseline, candidate)
    left, right = settings_of(baseline), settings_of(candidate)
    if not left and not right:
        return None, []
    differences = _differences(left, right)
    follows: dict[str, str] = {}
    protocol = None
    for factor in full_factors:
        for key in FOLLOWS.get(factor, ()):
            follows.setdefault(key, factor)
    if "lora.r" in full_factors:
        protocol, alpha_follows = _r_protocol(
            differences, (left.get("lora", {}), right.get("lora", {}))
        )
        if alpha_follows:
            follows.setdefault("lora.lora_alpha", "lora.r")
    listed = [
        SettingDifference(
            key=key, baseline=values[0], candidate=values[1], follows_from=follows.get(key)
        )
        for key, values in differences.items()
    ]
    confounded = [
        d.key
        for d in listed
        if full_factors and d.key not in full_factors and d.follows_from is None
    ]
    section = ProvenanceComparison(
        baseline_base=left.get("base"),
        candidate_base=right.get("base"),
        base_changed=changed,
        base_change_allowed=bool(changed) and allow_base_change,
        baseline_weights_sha256=_weights(baseline),
        candidate_weights_sha256=_weights(candidate),
        differences=listed,
        factors=full_factors,
        protocol=protocol,
        confounded=confounded,
    )
    return section, _checks(section, listed)


def _check(scope: str, passed: bool, reason: str) -> RuleCheck:
    return RuleCheck(
        rule=RULE,
        scope=scope,
        passed=passed,
        baseline=None,
        candidate=None,
        threshold=0.0,
        drop=None,
        p_value=None,
        significance=None,
        reason=reason,
        negative_flip_ids=[],
    )


def _checks(section: ProvenanceComparison, listed: list[SettingDifference]) -> list[RuleCheck]:
    if not section.factors:
        return []
    studied = ", ".join(section.factors)
    by_key = {d.key: d for d in listed}
    if section.confounded:
        return [
            _check(
                f"setting:{key}",
                False,
                f"{key} differs ({_show(by_key[key].baseline)} → {_show(by_key[key].candidate)}) "
                f"although the comparison studies {studied}: the result answers another question; "
                f"rerun with only {studied} changed, or declare {key} a --factor",
            )
            for key in section.confounded
        ]
    changed = [f for f in section.factors if f in by_key]
    if not changed:
        reason = f"{studied} does not differ between the two: nothing of it is compared"
    else:
        shown = "; ".join(
            f"{f} {_show(by_key[f].baseline)} → {_show(by_key[f].candidate)}" for f in changed
        )
        reason = f"only the factor differs: {shown}"
        if section.protocol:
            reason += f", at {section.protocol}"
    return [_check("settings", True, reason)]
