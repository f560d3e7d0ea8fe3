"""The on-demand hostile group (`python -m bench.hostile`) is well formed: every case
module of 13-27, 49, 50 that exists is discovered, listed and exposes a proper `CASE`.
No fault is executed here (the cases run on demand, for minutes); the fake tool service
they count effects with is checked for its de-duplication, on loopback."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import urllib.request
from pathlib import Path

from bench.hostile import __main__ as runner
from bench.hostile import cases
from bench.hostile.case import Case, Options
from bench.hostile.toolservice import ToolService

ROOT = Path(__file__).resolve().parents[2]
ON_DEMAND = {*range(13, 28), 49, 50}


def _modules() -> dict[int, str]:
    return {
        int(info.name[1:3]): info.name
        for info in pkgutil.iter_modules(cases.__path__)
        if info.name.startswith("c") and info.name[1:3].isdigit()
    }


def test_every_case_module_is_discovered_once_in_order() -> None:
    found = runner.discover()
    numbers = [case.number for case in found]
    assert numbers == sorted(set(numbers))
    assert set(numbers) == set(_modules())
    assert set(numbers) <= ON_DEMAND


def test_each_case_is_well_formed() -> None:
    for number, name in _modules().items():
        module = importlib.import_module(f"{cases.__name__}.{name}")
        case = module.CASE
        assert isinstance(case, Case), name
        assert case.number == number, f"{name} declares case {case.number}"
        assert case.title.strip() and len(case.title) < 120, name
        assert 0 < case.budget_s <= 3600 or number == 49, name
        assert callable(case.run), name
        params = list(inspect.signature(case.run).parameters)
        assert len(params) == 1, f"{name}: run(options) takes one argument"
        assert (module.__doc__ or "").strip(), f"{name} says what it checks in its docstring"
        assert Options().quick is False


def test_list_prints_every_case() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.hostile", "--list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed = {int(line.split()[0]) for line in done.stdout.splitlines() if line.strip()}
    assert listed == set(_modules())


def test_the_tool_service_dedupes_by_idempotency_key_and_counts_at_most_once_calls() -> None:
    with ToolService() as service:

        def post(header: str, key: str) -> dict[str, str]:
            request = urllib.request.Request(
                service.url + "/effects",
                data=json.dumps({"tool": "t", "args": {}}).encode(),
                headers={"Content-Type": "application/json", header: key},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=5) as response:
                return dict(json.loads(response.read()))

        first = post("Idempotency-Key", "k1")
        assert post("Idempotency-Key", "k1") == first
        post("X-Effect-Key", "k2")
        post("X-Effect-Key", "k2")
        assert service.applied() == {"k1": 1, "k2": 2}
        assert service.requests() == {"k1": 2, "k2": 2}


def test_the_table_of_a_past_run_shows_the_latest_full_line_and_what_failed(
    tmp_path: Path,
) -> None:
    def line(quick: bool, passed: bool, p99: float) -> str:
        return json.dumps(
            {
                "kind": "hostile",
                "quick": quick,
                "number": 23,
                "title": "Redis down",
                "passed": passed,
                "seconds": 1.0,
                "checks": {"0 lost decisions": True, "sockets reconnect": passed},
                "figures": {"latency (ms)": {"n": 3, "p50": 12.3456, "p99": p99, "max": 1234.5}},
            }
        )

    results = tmp_path / "hostile.jsonl"
    results.write_text("\n".join([line(False, False, 50.0), line(True, True, 1.0)]) + "\n")

    table = runner.table_from(results)

    assert "| 23 | Redis down | FAIL: sockets reconnect |" in table
    assert "latency (ms): p50 12.3 / p99 50 / max 1,234 (n=3)" in table
