"""The driver's model client: the shared one in `envfarm.llm` (retries, accounting, structured output).

The factory and the driver use the same client; this module keeps the driver's import path.
"""

from __future__ import annotations

from envfarm.llm import PREFIX, ChatModel, LLMError, ModelConfig, Transcript, Usage, parse_model

__all__ = ["PREFIX", "ChatModel", "LLMError", "ModelConfig", "Transcript", "Usage", "parse_model"]
