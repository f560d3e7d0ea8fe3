"""`python -m bench.scale`: the big database and its measurements.

    python -m bench.scale build [--threads N --pending M] [--rebuild]
    python -m bench.scale status           # the fixture's marker (JSON)
    python -m bench.scale drop
    python -m bench.scale plans [--json]   # EXPLAIN every inbox and runtime query there
    python -m bench.scale side ACTION JSON # one side of a measurement (bench.scale.side)

`rows` is the build's inner step (run by `build` in a process configured on the
fixture database). The measurements themselves run in `python -m bench --only scale`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from bench.scale import fixture


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("build", "rows"):
        command = commands.add_parser(name)
        command.add_argument("--threads", type=int, default=fixture.THREADS)
        command.add_argument("--pending", type=int, default=fixture.PENDING)
        if name == "build":
            command.add_argument("--rebuild", action="store_true")
    for name in ("status", "drop", "plans"):
        command = commands.add_parser(name)
        command.add_argument("--threads", type=int, default=fixture.THREADS)
        command.add_argument("--pending", type=int, default=fixture.PENDING)
        if name == "plans":
            command.add_argument("--json", action="store_true")
    side = commands.add_parser("side")
    side.add_argument("action")
    side.add_argument("params", nargs="?", default="{}")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.command == "build":
        print(json.dumps(fixture.ensure(args.threads, args.pending, rebuild=args.rebuild)))
    elif args.command == "status":
        print(json.dumps(fixture.marker(fixture.dsn(args.threads, args.pending))))
    elif args.command == "drop":
        fixture.drop(args.threads, args.pending)
    elif args.command == "rows":
        import django

        django.setup()  # configures logging for the product (WARNING): keep the progress
        logging.getLogger("bench.scale").setLevel(logging.INFO)
        logging.getLogger("bench.scale").addHandler(logging.StreamHandler(sys.stderr))
        print(json.dumps(fixture.write_rows(args.threads, args.pending)))
    elif args.command == "side":
        from bench.scale import side as measured_side

        return measured_side.main(args.action, args.params)
    elif args.command == "plans":
        from bench.scale import plans as query_plans

        return query_plans.main(fixture.dsn(args.threads, args.pending), as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
