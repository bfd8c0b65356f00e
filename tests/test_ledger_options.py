"""``evalkit ledger`` takes no option that is a library parameter.

Its PATH (a ledger, its folder or a gold file) is the input, and ``--json``,
``--force`` and ``-q`` are its outputs; ``read_ledger``'s only other
parameter, ``gold_sha256``, is what the command derives from a gold file
given as PATH. So the command has no options object: an option added to it
that the library takes belongs on a ``LedgerParams`` (evalkit.options), and
this test says so.
"""

from __future__ import annotations

import inspect

from evalkit.cli.ledger_cmd import ledger_command
from evalkit.provenance.ledger_state import read_ledger


def test_the_ledger_command_has_only_inputs_and_outputs() -> None:
    names = {param.name for param in ledger_command.params}
    assert names == {"path", "json_path", "force", "quiet"}, (
        "a new ledger option that the library takes: define it as a field of a LedgerParams "
        "(evalkit.options.Params) and build the command with params_options"
    )
    assert list(inspect.signature(read_ledger).parameters) == ["path", "gold_sha256"]
