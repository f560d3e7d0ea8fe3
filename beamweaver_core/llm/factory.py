"""`init_chat_model("provider:model", **options)`: build a chat model from a string."""

from __future__ import annotations

from typing import Any

from beamweaver_core.llm.anthropic import AnthropicChatModel
from beamweaver_core.llm.base import ChatModel
from beamweaver_core.llm.openai import OpenAIChatModel
from beamweaver_core.llm.scripted import ScriptedChatModel

PROVIDERS = ("anthropic", "openai", "scripted")
_EXAMPLES = "e.g. 'openai:gpt-4o', 'anthropic:claude-sonnet-4-5' or 'scripted'"


def init_chat_model(model: str, **options: Any) -> ChatModel:
    """Build a chat model from `"provider:model"`; `options` go to the provider's class.

    Providers: `openai` (`OpenAIChatModel`, also any OpenAI-compatible server through
    `base_url=`), `anthropic` (`AnthropicChatModel`) and `scripted` (`ScriptedChatModel`,
    which takes `responses=[...]`; a model name after `scripted:` is optional). Only the
    first colon separates the provider, so `"openai:llama3.1:8b"` names model
    `llama3.1:8b`. Nothing touches the network or needs a key until the first call.
    """
    if not isinstance(model, str):
        raise TypeError(
            f"init_chat_model expects a 'provider:model' string ({_EXAMPLES}), got {model!r}"
        )
    provider, _, name = model.partition(":")
    provider, name = provider.strip().lower(), name.strip()
    if provider == "scripted":
        return ScriptedChatModel(model_name=name or "scripted", **options)
    if provider not in PROVIDERS:
        raise ValueError(
            f"Unknown chat model provider {provider!r} in {model!r}. Accepted providers: "
            f"{', '.join(PROVIDERS)} ({_EXAMPLES})."
        )
    if not name:
        raise ValueError(
            f"{model!r} names no model. Write 'provider:model' ({_EXAMPLES}); "
            f"accepted providers: {', '.join(PROVIDERS)}."
        )
    if provider == "openai":
        return OpenAIChatModel(name, **options)
    return AnthropicChatModel(name, **options)


__all__ = ["PROVIDERS", "init_chat_model"]
