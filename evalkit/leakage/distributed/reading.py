"""The read stage of the Ray audit: every split's blocks, read on the cluster.

Blocks are read by :func:`evalkit.leakage.distributed.blocks.read_block`; a
split whose range blocks failed or disagree is read again whole. The driver
keeps each block's summary and the references to its parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from evalkit.chat import Role, require_compared_roles
from evalkit.leakage.distributed import blocks as block_io
from evalkit.leakage.distributed.session import RayOptions, RaySession
from evalkit.leakage.inputs import SplitSource


@dataclass(frozen=True)
class ReadBlocks:
    """The blocks of every split as read: summaries on the driver, parts on the cluster."""

    summaries: list[block_io.BlockSummary]
    outputs: list[list[Any]]  # per block: summary, texts, ids, groups, openings (refs)
    parts: int

    def texts(self) -> list[Any]:
        """Each block's routable texts."""
        return [out[1] for out in self.outputs]

    def release_texts(self) -> None:
        """Drop the references to the blocks' texts (once sorted), so Ray frees them."""
        for out in self.outputs:
            out[1] = None

    def part(self, kind: int, k: int) -> list[Any]:
        """Part ``k`` of every block's ids (kind 0), group keys (1) or openings (2)."""
        return [out[2 + kind * self.parts + k] for out in self.outputs]


def read_all(
    session: RaySession,
    spec: block_io.ReadSpec,
    sources: list[SplitSource],
    frames: list[pl.DataFrame | None],
    options: RayOptions,
) -> ReadBlocks:
    """Read every split in blocks (again whole where blocks cannot decide)."""
    read = session.remote(block_io.read_block, num_returns=2 + 3 * spec.parts)
    stored = [session.put(frame) if frame is not None else None for frame in frames]
    planned = block_io.plan_blocks(sources, options.block_bytes)
    outputs = [list(read.remote(spec, b, stored[b.split])) for b in planned]
    summaries = session.run("reading blocks", [out[0] for out in outputs])
    again = block_io.splits_to_reread(summaries, planned)
    if again:  # read those splits whole: types decided by the whole file, errors as local
        kept = [i for i, b in enumerate(planned) if b.split not in again]
        whole = [block_io.Block(split, sources[split]) for split in sorted(again)]
        redone = [list(read.remote(spec, b, stored[b.split])) for b in whole]
        redone_summaries = session.run("reading splits whole", [out[0] for out in redone])
        merged = [(planned[i], summaries[i], outputs[i]) for i in kept] + list(
            zip(whole, redone_summaries, redone, strict=True)
        )
        merged.sort(key=lambda item: (item[0].split, item[0].start or 0))
        summaries = [item[1] for item in merged]
        outputs = [item[2] for item in merged]
    _require_roles(summaries, spec.roles)
    return ReadBlocks(summaries, outputs, spec.parts)


class _ChatFacts:
    """What :func:`require_compared_roles` asks of a split's conversations, from its blocks."""

    def __init__(self, summaries: list[block_io.BlockSummary]) -> None:
        self.is_conversation = any(s.kind == "conversation" for s in summaries)
        self.rows = sum(s.n_rows for s in summaries)
        self.present = set().union(*(s.roles_present for s in summaries))

    def __len__(self) -> int:
        return self.rows

    def roles_present(self) -> set[str]:
        return self.present


def _require_roles(summaries: list[block_io.BlockSummary], roles: Sequence[Role]) -> None:
    by_split: dict[int, list[block_io.BlockSummary]] = {}
    for summary in summaries:
        by_split.setdefault(summary.split, []).append(summary)
    facts = [_ChatFacts(by_split[split]) for split in sorted(by_split)]
    require_compared_roles(facts, roles)  # type: ignore[arg-type]
