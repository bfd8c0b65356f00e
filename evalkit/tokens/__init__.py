"""Tokenizer- and chat-template-aware views of the data (transformers, imported lazily).

Every command that turns conversations into tokens (``tokens``, ``split
--tokenizer``, ``generate``) goes through this package, so training checks
and inference prompts are one code path:

- :mod:`~evalkit.tokens.load`: a local tokenizer folder, offline; stop ids.
- :mod:`~evalkit.tokens.render`: chat-template renders (training and
  inference prompts) and their ids, as ``apply_chat_template`` gives them.
- :mod:`~evalkit.tokens.spans`, :mod:`~evalkit.tokens.encode`: the loss
  mask, from ``{% generation %}`` markers or the assistant contents' spans.
- :mod:`~evalkit.tokens.parity`: the inference prompt against the training ids.
- :mod:`~evalkit.tokens.plan`, :mod:`~evalkit.tokens.figures`: per-example
  figures in one pipelined pass; :mod:`~evalkit.tokens.checks` and
  :mod:`~evalkit.tokens.stats` turn them into the report
  (:mod:`~evalkit.records._tokens`); :mod:`~evalkit.tokens.api` is
  ``evalkit.check_tokens``.
- :mod:`~evalkit.tokens.lengths`: token lengths for ``split --tokenizer``.
"""
