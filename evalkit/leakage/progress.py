"""Progress bars for long jobs: on a terminal only, and never on stdout.

A bar is drawn with tqdm on stderr when progress is asked for *and* stderr is
a terminal, so CI logs and pipes stay clean. tqdm is imported only then.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

Tick = Callable[[int], object]


def _ignore(_count: int) -> None:
    return None


class Progress:
    """Hands out one bar per stage of a job, or silent counters when disabled."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = bool(enabled) and sys.stderr.isatty()
        # Asked for silence (-q, or the library's default): also no engine's messages.
        self.quiet = not enabled

    @contextlib.contextmanager
    def stage(self, description: str, total: int, unit: str) -> Iterator[Tick]:
        """A bar for ``total`` ``unit``s; the yielded function advances it by a count."""
        if not self.enabled or total <= 0:
            yield _ignore
            return
        from tqdm import tqdm

        with tqdm(
            total=total,
            desc=description,
            unit=f" {unit}",
            unit_scale=True,
            file=sys.stderr,
            leave=False,
            dynamic_ncols=True,
        ) as bar:
            yield bar.update
