"""Tokenizer- and chat-template-aware views of the data (transformers, imported lazily).

:mod:`evalkit.tokens.load` loads a local tokenizer folder offline;
:mod:`evalkit.tokens.render` renders conversations with its chat template
and encodes the renders as ``apply_chat_template(tokenize=True)`` does. Every
command that turns conversations into tokens (``tokens``, ``split
--tokenizer``, ``generate``) goes through these, so training checks and
inference prompts are one code path.
"""
