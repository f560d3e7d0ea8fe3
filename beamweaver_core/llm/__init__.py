"""Chat models: the `ChatModel` contract, providers, and `init_chat_model` (api.md §2).

Importing this package does not import the optional provider SDKs (`openai`,
`anthropic`); a provider imports its SDK on its first call.
"""

from __future__ import annotations

from beamweaver_core.llm.anthropic import AnthropicChatModel
from beamweaver_core.llm.base import ChatModel, StreamItem, ToolCallChunk, ToolSpec
from beamweaver_core.llm.factory import init_chat_model
from beamweaver_core.llm.openai import OpenAIChatModel
from beamweaver_core.llm.scripted import ScriptedChatModel

__all__ = [
    "AnthropicChatModel",
    "ChatModel",
    "OpenAIChatModel",
    "ScriptedChatModel",
    "StreamItem",
    "ToolCallChunk",
    "ToolSpec",
    "init_chat_model",
]
