"""Summarize a py-spy profile of a worker: where the timed part's wall time goes.

Record one engine's run of a workload (with `--idle`, so that time spent waiting on the
database counts too), then summarize the samples taken inside the workload's timed loop:

    DATABASE_URL=... py-spy record --idle --full-filenames -r 1000 -f raw -o prof.txt -- \\
        python -m bench.worker linear beamweaver '{"backend": "postgres", "threads": 500}'
    python -m bench.pyspy_report prof.txt --top 15

Prints the share of samples by the package of the innermost frame ("own"), and the
functions with the largest inclusive share.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from bench.profiling import module_of, package_of

_FRAME = re.compile(r"^(?P<func>.*) \((?P<path>[^()]*?)(?::(?P<line>\d+))?\)$")


def _parse(frame: str) -> tuple[str, str]:
    match = _FRAME.match(frame.strip())
    if match is None:
        return frame.strip(), "?"
    return match["func"], match["path"]


def _is_focus(func: str, focus: str) -> bool:
    return not focus or func == focus or func.endswith(f".{focus}")


def summarize(path: Path, focus: str, top: int) -> str:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if focus not in stack or not count.isdigit():
            continue
        frames = [_parse(f) for f in stack.split(";")]
        start = next((i for i, (func, _) in enumerate(frames) if _is_focus(func, focus)), None)
        if start is None:
            continue
        n = int(count)
        total += n
        timed = frames[start:]
        own[package_of(timed[-1][1])] += n
        for name in {f"{module_of(p)}.{func}" for func, p in timed}:
            inclusive[name] += n
    if not total:
        return f"no samples under {focus!r}"
    where = f"inside {focus!r}" if focus else "in all"
    lines = [f"{total} samples {where}", "own (innermost frame) by module:"]
    lines += [f"  {n / total * 100:5.1f}%  {name}" for name, n in own.most_common(top)]
    lines.append("inclusive, by function:")
    lines += [f"  {n / total * 100:5.1f}%  {name}" for name, n in inclusive.most_common(top)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("profile", type=Path, help="py-spy raw output (-f raw)")
    parser.add_argument(
        "--focus", default="timed", help="frame that starts the timed part ('' = every sample)"
    )
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    print(summarize(args.profile, args.focus, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
