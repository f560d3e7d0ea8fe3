"""init_chat_model: provider strings, options, and errors naming the accepted providers."""

from __future__ import annotations

import pytest

from beamweaver_core.llm import (
    AnthropicChatModel,
    OpenAIChatModel,
    ScriptedChatModel,
    init_chat_model,
)
from beamweaver_core.messages import Message

ACCEPTED = "Accepted providers: anthropic, openai, scripted"


def test_openai_with_options() -> None:
    model = init_chat_model("openai:gpt-4o", temperature=0.1, base_url="http://vllm:8000/v1")
    assert isinstance(model, OpenAIChatModel)
    assert (model.model_name, model.temperature, model.base_url) == (
        "gpt-4o",
        0.1,
        "http://vllm:8000/v1",
    )


def test_only_the_first_colon_separates_the_provider() -> None:
    model = init_chat_model("openai:llama3.1:8b", base_url="http://localhost:11434/v1")
    assert model.model_name == "llama3.1:8b"


def test_anthropic_with_options() -> None:
    model = init_chat_model("anthropic:claude-haiku-4-5", max_tokens=512)
    assert isinstance(model, AnthropicChatModel)
    assert (model.model_name, model.max_tokens) == ("claude-haiku-4-5", 512)


def test_provider_is_case_and_space_insensitive() -> None:
    assert isinstance(init_chat_model(" OpenAI : gpt-4o "), OpenAIChatModel)


@pytest.mark.parametrize("spec", ["scripted", "scripted:demo"])
def test_scripted_with_or_without_a_name(spec: str) -> None:
    reply = Message.assistant("hi")
    model = init_chat_model(spec, responses=[reply])
    assert isinstance(model, ScriptedChatModel)
    assert model.invoke([Message.user("x")]) is reply


def test_scripted_name_is_the_model_name() -> None:
    assert init_chat_model("scripted:demo", responses=[]).model_name == "demo"
    assert init_chat_model("scripted", responses=[]).model_name == "scripted"


@pytest.mark.parametrize("spec", ["gemini:pro", "gpt-4o", "", ":gpt-4o"])
def test_unknown_provider_names_the_accepted_ones(spec: str) -> None:
    with pytest.raises(ValueError, match=f"Unknown chat model provider .*{ACCEPTED}"):
        init_chat_model(spec)


@pytest.mark.parametrize("spec", ["openai", "anthropic:", "openai: "])
def test_a_missing_model_name_is_rejected(spec: str) -> None:
    with pytest.raises(ValueError, match=r"names no model.*accepted providers: anthropic, openai"):
        init_chat_model(spec)


def test_a_non_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="expects a 'provider:model' string"):
        init_chat_model(None)  # type: ignore[arg-type]
