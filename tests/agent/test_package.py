"""The `beamweaver_core.agent` package surface, and that it imports without the extras."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import beamweaver_core.agent

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_every_public_name_is_importable_from_the_package() -> None:
    for name in beamweaver_core.agent.__all__:
        assert getattr(beamweaver_core.agent, name).__name__ == name


def test_the_package_imports_without_the_mcp_and_langchain_extras() -> None:
    result = run_python(
        "import sys\n"
        "sys.modules['mcp'] = None\n"  # as if the extras were not installed
        "sys.modules['langchain_core'] = None\n"
        "from beamweaver_core.agent import HITL, Agent, Message, tool\n"
        "print(Agent.__name__, HITL.__name__, Message.__name__, tool.__name__)\n"
        "for name in ('MCPServerStdio', 'LangChainTool'):\n"
        "    try:\n"
        "        getattr(__import__('beamweaver_core.agent').agent, name)\n"
        "    except ImportError as exc:\n"
        "        print(exc)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Agent HITL Message tool",
        "MCP tools need the official `mcp` SDK, which is not installed. Install the extra: "
        "pip install 'beamweaver[mcp]'",
        "LangChain tools need `langchain-core`, which is not installed. Install the extra: "
        "pip install 'beamweaver[langchain]'",
    ]
