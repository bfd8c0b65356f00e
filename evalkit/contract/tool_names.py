"""The names of tool-calling contracts' rules, apart from the code that applies them.

The contract model checks ``output.syntax`` against these names, and the
evaluator semantics record :data:`AUTO_ORDER`; neither needs the parsers
themselves (:mod:`evalkit.contract.tool_syntax`, whose registry holds one
parser object per text syntax named here).
"""

from __future__ import annotations

AUTO = "auto"
STRUCTURED = "structured"
TEXT_SYNTAXES = ("qwen", "hermes", "llama3", "mistral", "json")
"""The text syntaxes (``hermes`` is ``qwen``'s other name)."""
SYNTAX_CHOICES = (AUTO, STRUCTURED, *TEXT_SYNTAXES)
"""Every value ``output.syntax`` takes."""
AUTO_ORDER = ("mistral", "qwen", "llama3", "json")
"""The text syntaxes ``auto`` tries, in this order (the most distinctive markers first)."""
FUNCTION_CLASS = "function"
"""The only ``class`` a tool-calling contract takes: the called function."""
NO_CALL = "none"
"""The class of an example whose gold expects no call."""
NAME_FIELD = "name"
"""The field of a call's function name."""
ARGUMENT_PREFIX = "arguments."
"""Fields ``arguments.<key>`` compare one argument of a call."""
MISSING = "missing"
"""The error of an id without an output."""
EMPTY = "empty"
"""The error of an output with no text and no call."""
UNPARSABLE_CALL = "unparsable_call"
"""The error of calls found that do not parse."""
MISSING_DETAIL = "no output for this id"
EMPTY_DETAIL = "the output is blank (no text and no call)"
