"""What a reload check regenerates, whichever backend regenerates it.

The run's prompts are rendered again through the one code path
(:func:`evalkit.model.prompts.read_prompts`) and the control examples chosen
from them; each backend (:data:`evalkit.model.backends.BACKENDS`'
``regenerate``) then decodes the controls its own way and hands back a
:class:`Regeneration`, which :mod:`evalkit.model.worker` compares with the
tokens that were scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import ArtifactChanged
from evalkit.model.decode import Generation
from evalkit.model.prompts import PromptSet
from evalkit.records._run import TOKENS_FILE, RunRecord, VllmSettings


@dataclass(frozen=True)
class Regeneration:
    """The controls of a run, regenerated."""

    tokenizer: Any
    """The tokenizer the prompts were rendered with (names the tokens of a difference)."""
    prompts: PromptSet
    """Every row's prompt, rendered now."""
    controls: list[int]
    """The control examples' rows, in data order."""
    generations: dict[int, Generation]
    """Row -> what was generated now (the controls, and with the run's layout their
    batches' other members)."""
    device: str
    """``cpu`` or ``cuda``."""
    dtype: str
    """The dtype of the weights."""
    vllm: VllmSettings | None = None
    """The vLLM engine's settings (vllm backend)."""


def control_prompts(
    request: dict[str, Any], run: RunRecord, tokens: Any, tokenizer: Any, folder: Path
) -> tuple[PromptSet, list[int]]:
    """The run's prompts rendered again with ``tokenizer``, and the control rows of the request.

    ``tokens.parquet`` must list the data's ids in the data's order (else the
    run folder was edited: exit 2).
    """
    from evalkit.model.divergence import choose_controls
    from evalkit.model.prompts import read_prompts

    prompts = read_prompts(
        Path(str(run.data.path)),  # a run from a frame is refused before (verify_pins)
        run.data.id_column,
        run.data.text_columns,
        tokenizer,
        tokenizer_folder=folder,
    )
    if tokens[run.data.id_column].to_list() != prompts.ids:
        raise ArtifactChanged(
            f"{Path(request['run_dir']) / TOKENS_FILE}: its ids are not the data's ids in the "
            "data's order; the run folder was edited: run evalkit generate again"
        )
    return prompts, choose_controls(prompts.ids, int(request["n"]), int(request["seed"]))
