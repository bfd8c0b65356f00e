"""``evalkit.check_tokens``: the data as the model will see it, checked before training.

read (splits, tokenizer) -> render (chat template, once per conversation and
prompt) -> encode (in batches) -> measure (one pass, per-example figures) ->
check and summarise (vectorised) -> a :class:`TokensReport`, plus seeded
samples for the HTML page.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.io import FRAME_SOURCE
from evalkit.options import takes
from evalkit.tokens.checks import (
    Context,
    Measured,
    missing_template,
    run_checks,
    skipped,
    special_tokens_check,
)
from evalkit.tokens.figures import Settings, empty_figures, measure
from evalkit.tokens.inputs import SplitInput, read_splits, resolve_modes
from evalkit.tokens.load import (
    chat_template,
    chat_template_sha256,
    load_tokenizer,
    require_fast,
    stop_token_ids,
    tokenizer_sha256,
)

if TYPE_CHECKING:
    from evalkit.tokens.inputs import Splits
from evalkit.records import TruncationMode
from evalkit.records._tokens import (
    ArgumentsHanded,
    CheckName,
    CheckResult,
    Loss,
    SplitTokens,
    TokenizerInfo,
    TokensOptions,
    TokensReport,
)
from evalkit.tokens.options import TokensParams
from evalkit.tokens.parity import split_token_ids
from evalkit.tokens.plan import (
    SplitPlanner,
    added_token_strings,
    excluded_turns,
    first_special,
    special_in_text,
)
from evalkit.tokens.render import has_generation_markers
from evalkit.tokens.samples import Sample, build_samples, sample_rows
from evalkit.tokens.stats import supervised_ratio, token_counts, truncation

NEED_TEMPLATE: tuple[CheckName, ...] = ("render_parity", "double_bos", "stop_token", "pad_is_eos")


# Examples per split the HTML page shows when ``sample`` is not given.
DEFAULT_HTML_SAMPLE = 5


@dataclass(frozen=True)
class TokensResult:
    """The report, and the sampled examples (``sample`` per split) for the HTML page."""

    report: TokensReport
    samples: list[Sample]

    @property
    def failed(self) -> bool:
        """Whether a check failed (the command exits 1)."""
        return self.report.status == "fail"


def _tokenizer_info(tokenizer: Any, folder: Path, stops: list[int]) -> TokenizerInfo:
    return TokenizerInfo(
        path=str(folder),
        sha256=tokenizer_sha256(folder),
        chat_template_sha256=chat_template_sha256(tokenizer),
        generation_markers=has_generation_markers(chat_template(tokenizer)),
        bos_token=tokenizer.bos_token,
        eos_token=tokenizer.eos_token,
        pad_token=tokenizer.pad_token,
        stop_tokens=[str(tokenizer.convert_ids_to_tokens(i)) for i in stops],
    )


def measure_settings(
    tokenizer: Any, stops: list[int], max_seq_length: int | None, mode: TruncationMode
) -> Settings:
    """The tokenizer facts every row is measured against (shared with ``evalkit smoke``)."""
    pad = tokenizer.pad_token_id
    return Settings(
        stop_ids=frozenset(stops),
        # Without a pad token, trainers pad with the eos (TRL does).
        pad_id=pad if pad is not None else tokenizer.eos_token_id,
        bos_id=tokenizer.bos_token_id,
        split_ids=split_token_ids(tokenizer),
        max_seq_length=max_seq_length,
        truncation_mode=mode,
    )


def _arguments(split: SplitInput, handed: Mapping[str, int] | None) -> ArgumentsHanded | None:
    """How the split's tool-call arguments reached the template (null for text data)."""
    if not split.chat.is_conversation:
        return None
    counts: Mapping[str, int]
    if handed is None:
        from evalkit.chat import handed_counts, template_conversations

        counts = {how: n for how, n in handed_counts(template_conversations(split.chat)).items()}
    else:
        counts = handed
    return ArgumentsHanded(
        parsed=counts.get("parsed", 0),
        text=counts.get("text", 0),
        as_written=counts.get("as_written", 0),
    )


def _split_tokens(
    split: SplitInput, measured: Measured, limit: int | None, loss: Loss, planner: SplitPlanner
) -> SplitTokens:
    figures = measured.figures
    return SplitTokens(
        path=str(split.path) if split.path is not None else None,
        sha256=split.sha256,
        source=FRAME_SOURCE if split.path is None else None,
        n=figures.n,
        tokens=token_counts(figures),
        supervised_ratio=supervised_ratio(figures),
        total_tokens=int(figures.total.sum()),
        supervised_tokens=int(figures.supervised.sum()),
        excluded_turns=excluded_turns(split, loss),
        tool_calls=split.chat.tool_call_count,
        empty_tool_lists=split.chat.empty_tool_lists or None,
        arguments=_arguments(split, planner.handed),
        truncation=truncation(figures, limit),
    )


def _status(checks: Sequence[CheckResult]) -> Any:
    statuses = {check.status for check in checks}
    return "fail" if "fail" in statuses else "warn" if "warn" in statuses else "pass"


@takes(TokensParams)
def check_tokens(
    files: Splits,
    params: TokensParams | None = None,
    /,
    *,
    tokenizer: Path | str,
    json: str | os.PathLike[str] | None = None,
    html: str | os.PathLike[str] | None = None,
    html_page: Callable[[TokensResult], str] | None = None,
    force: bool = False,
    **values: Any,
) -> TokensResult:
    """Check the splits in ``files`` as the model will see them through ``tokenizer``.

    ``files`` are split files (each named by its stem) or folders written by
    ``evalkit split``, a mapping of split name to table (a polars, pandas or
    pyarrow frame, or a file), or one table (a frame is then named ``data``).
    ``params`` is a :class:`~evalkit.tokens.options.TokensParams` (the
    command's options), or its fields as keywords (``text=``,
    ``seq_len=``, ...).

    ``text`` is a column of conversations or of text, two columns (prompt
    and completion) or three (Alpaca's instruction, input and output);
    ``system`` and ``tools`` name the columns of system prompts and tools
    (default: columns named ``system`` and ``tools``, when present), passed to
    the chat template with each conversation. Conversations are rendered with the tokenizer's
    chat template and encoded as ``apply_chat_template(tokenize=True)`` does
    (``encode="template"``), or rendered and then encoded as text with the
    tokenizer's special tokens added (``encode="text"``: what a pipeline that
    renders and re-tokenizes does). ``loss`` says which tokens are supervised
    (default: assistant turns for conversations, the completion for a pair,
    everything for one text column). ``sample`` examples per split (default
    none) are kept, drawn with ``seed``, for the HTML page. Raises an
    ``EvalkitError`` for bad input; a problem the checks find is in the
    report, not raised.

    With ``json`` the report is written there too, and with ``html`` the page
    ``html_page`` renders from the result (``sample`` then defaults to
    5 per split), as ``evalkit tokens --json --html`` writes
    them (which is this call): atomically, never over an input, and over
    existing files only with ``force`` (checked before anything is read).
    """
    from evalkit.errors import ParameterError
    from evalkit.io import CommandFiles, ReportFile

    given = TokensParams.build(params, values)
    if html is not None and html_page is None:
        raise ParameterError(
            "html_page", "is needed to write {html}: pass the page's renderer", refs=["html"]
        )
    if html is not None and given.sample is None:
        given = replace(given, sample=DEFAULT_HTML_SAMPLE)
    command = CommandFiles(force=force).reads(*_paths(files), tokenizer)
    command.writes(json, option="json").writes(html, option="html").check()
    result = _check_tokens(files, given, tokenizer)
    ReportFile(json).write(result.report.model_dump_json(indent=2) + "\n")
    if html is not None and html_page is not None:
        ReportFile(html).write(html_page(result))
    return result


def _paths(files: Splits) -> list[str | os.PathLike[str]]:
    """The files and folders among ``files`` (frames are read from memory)."""
    from evalkit.io import is_path

    if isinstance(files, Mapping):
        return [table for table in files.values() if is_path(table)]
    if is_path(files):
        return [files]
    if isinstance(files, Sequence):
        return [table for table in files if is_path(table)]
    return []


def _check_tokens(files: Splits, given: TokensParams, tokenizer: Path | str) -> TokensResult:
    """The tokens check of ``files`` under ``given`` (see :func:`check_tokens`)."""
    columns = list(given.text)
    id_column, system, tools = given.id_column, given.system, given.tools
    max_seq_length, truncation_mode = given.seq_len, given.truncation_mode
    sample = 0 if given.sample is None else given.sample
    seed = given.seed
    folder = Path(tokenizer)
    loaded = load_tokenizer(folder)
    require_fast(loaded, folder)
    splits = read_splits(files, columns, id_column, system=system, tools=tools)
    chosen_loss, chosen_encode = resolve_modes(splits[0].chat, given.loss, given.encode)
    conversations = splits[0].chat.is_conversation
    stops = stop_token_ids(loaded, folder)
    template = chat_template(loaded)
    markers = has_generation_markers(template)
    options = TokensOptions(
        text=columns,
        id=id_column,
        kind="conversation" if conversations else "text",
        encode=chosen_encode,
        loss=chosen_loss,
        max_seq_length=max_seq_length,
        truncation_mode=truncation_mode,
        sample=sample,
        seed=seed,
        system=system,
        tools=tools,
    )
    settings = measure_settings(loaded, stops, max_seq_length, truncation_mode)
    context = Context(
        tokenizer=loaded,
        conversations=conversations,
        template_sha256=chat_template_sha256(loaded),
        markers=markers,
        stop_ids=stops,
        pad_is_stop=loaded.pad_token_id is None or loaded.pad_token_id in settings.stop_ids,
        max_seq_length=max_seq_length,
        special_strings=added_token_strings(loaded),
    )
    info = _tokenizer_info(loaded, folder, stops)
    if conversations and template is None:
        return _without_template(loaded, splits, options, info, folder)
    measured: list[Measured] = []
    planners: list[SplitPlanner] = []
    samples: list[Sample] = []
    for index, split in enumerate(splits):
        planner = SplitPlanner(split, loaded, chosen_loss, chosen_encode, markers)
        planners.append(planner)
        rows = sample_rows(planner.n, sample, seed, index)
        figures = measure(loaded, planner.n, planner, settings, rows)
        measured.append(
            Measured(split.name, split.ids, figures, planner.special_in_text, planner.special_found)
        )
        samples.extend(build_samples(loaded, split.name, split.ids, figures))
    checks = run_checks(context, measured)
    report = TokensReport(
        tokenizer=info,
        options=options,
        splits={
            split.name: _split_tokens(split, m, max_seq_length, chosen_loss, planner)
            for split, m, planner in zip(splits, measured, planners, strict=True)
        },
        checks=checks,
        status=_status(checks),
    )
    return TokensResult(report, samples)


def _without_template(
    tokenizer: Any,
    splits: list[SplitInput],
    options: TokensOptions,
    info: TokenizerInfo,
    folder: Path,
) -> TokensResult:
    """Conversations but no chat template: the template check fails, the rest cannot run."""

    strings = added_token_strings(tokenizer)
    measured = []
    for split in splits:
        flags = special_in_text(split, strings)
        measured.append(
            Measured(
                split.name,
                split.ids,
                empty_figures(len(split.ids)),
                flags,
                first_special(split, flags, strings),
            )
        )
    context = Context(tokenizer, True, None, False, [], False, options.max_seq_length, strings)
    why = "needs the chat template, which the tokenizer does not have"
    checks = [missing_template(measured, str(folder))]
    checks += [skipped(name, measured, why) for name in NEED_TEMPLATE]
    checks.append(special_tokens_check(context, measured))
    checks += [skipped("empty_mask", measured, why), skipped("truncation", measured, why)]
    report = TokensReport(
        tokenizer=info,
        options=options,
        splits={
            split.name: SplitTokens(
                path=str(split.path) if split.path is not None else None,
                sha256=split.sha256,
                source=FRAME_SOURCE if split.path is None else None,
                n=len(split.ids),
                tokens=None,
                supervised_ratio=None,
                total_tokens=None,
                supervised_tokens=None,
                excluded_turns=excluded_turns(split, options.loss),
                tool_calls=split.chat.tool_call_count,
                empty_tool_lists=split.chat.empty_tool_lists or None,
                arguments=_arguments(split, None),
                truncation=None,
            )
            for split in splits
        },
        checks=checks,
        status="fail",
    )
    return TokensResult(report, [])
