"""The `beamweaver_core.llm` package surface, and that it never imports the provider SDKs."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

import beamweaver_core.llm

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_exports_exactly_the_public_names() -> None:
    assert sorted(beamweaver_core.llm.__all__) == [
        "AnthropicChatModel",
        "ChatModel",
        "OpenAIChatModel",
        "ScriptedChatModel",
        "StreamItem",
        "ToolCallChunk",
        "ToolSpec",
        "init_chat_model",
    ]
    for name in set(beamweaver_core.llm.__all__) - {"StreamItem"}:  # a type alias
        assert getattr(beamweaver_core.llm, name).__name__ == name


def test_importing_and_creating_models_does_not_import_the_sdks() -> None:
    result = run_python(
        "import sys\n"
        "from beamweaver_core.llm import init_chat_model\n"
        "init_chat_model('openai:gpt-4o')\n"
        "init_chat_model('anthropic:claude-haiku-4-5')\n"
        "loaded = sorted(m for m in ('openai', 'anthropic') if m in sys.modules)\n"
        "print(loaded)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_provider_modules_import_without_the_sdks_installed() -> None:
    result = run_python(
        "import sys\n"
        "sys.modules['openai'] = None\n"  # as if the extra were not installed
        "sys.modules['anthropic'] = None\n"
        "from beamweaver_core.llm.openai import OpenAIChatModel\n"
        "from beamweaver_core.llm.anthropic import AnthropicChatModel\n"
        "from beamweaver_core.exceptions import ModelProviderError\n"
        "from beamweaver_core.messages import Message\n"
        "for model in (OpenAIChatModel('gpt-4o', api_key='k'),\n"
        "              AnthropicChatModel('claude-haiku-4-5', api_key='k')):\n"
        "    try:\n"
        "        model.invoke([Message.user('hi')])\n"
        "    except ModelProviderError as exc:\n"
        "        print(exc)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "The OpenAI provider needs the 'openai' package, which is not installed. "
        "Install the extra: pip install 'beamweaver[openai]'",
        "The Anthropic provider needs the 'anthropic' package, which is not installed. "
        "Install the extra: pip install 'beamweaver[anthropic]'",
    ]


def test_the_network_guard_blocks_connections_and_lookups(network_attempts: list[str]) -> None:
    with socket.socket() as sock, pytest.raises(OSError, match="real network connection"):
        sock.connect(("192.0.2.1", 443))
    with pytest.raises(OSError, match="real DNS lookup"):
        socket.getaddrinfo("api.openai.com", 443)
    assert network_attempts == ["connect ('192.0.2.1', 443)", "getaddrinfo 'api.openai.com'"]
    network_attempts.clear()  # the attempts were this test's point; don't fail its teardown
