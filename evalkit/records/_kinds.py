"""The vocabularies persisted files share with the command line: plain types, no pydantic.

An options module (loaded to build ``--help``) takes these names from here, so
that showing help imports no model.
"""

from __future__ import annotations

from typing import Literal

Loss = Literal["assistant", "completion", "all"]
Encode = Literal["template", "text"]
TruncationMode = Literal["keep_start", "keep_end"]
MeasureKind = Literal["cuda_max_memory_allocated", "process_rss", "process_rss_since_start"]
Backend = Literal["hf", "vllm"]
"""Who decodes in ``generate`` and ``reload-check``: transformers (hf) or vLLM."""
