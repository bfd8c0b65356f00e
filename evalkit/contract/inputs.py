"""The files a contract file makes a command read: itself, and the schema file it names.

A command that writes an output checks that the output replaces none of its
inputs (:class:`evalkit.io.CommandFiles`); a contract's ``output.schema_file``
is one of them, though no option names it.
"""

from __future__ import annotations

import os
from pathlib import Path


def schema_file_of(contract: str | os.PathLike[str]) -> Path | None:
    """The ``output.schema_file`` a contract file names, as it resolves; None when it names none.

    Read tolerantly: a contract that cannot be read names nothing here (loading
    it says what is wrong).
    """
    from evalkit.contract.load import read_document
    from evalkit.errors import EvalkitError

    path = Path(contract)
    try:
        document = read_document(path)
    except EvalkitError:
        return None
    output = document.get("output") if isinstance(document, dict) else None
    relative = output.get("schema_file") if isinstance(output, dict) else None
    return path.parent / relative if isinstance(relative, str) and relative else None
