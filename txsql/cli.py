"""The ``txsql`` command line: ``txsql demo``, ``txsql --version``."""

from __future__ import annotations

import argparse
import sys

from txsql.version import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="txsql", description=__doc__)
    parser.add_argument("--version", action="version", version=f"txsql {__version__}")
    commands = parser.add_subparsers(dest="command")
    demo = commands.add_parser("demo", help="create a table, write, time travel, show history")
    demo.add_argument("--warehouse", help="keep the demo tables here (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        # Deferred: `txsql --version` must not load pyspark.
        from txsql.demo import run_demo

        run_demo(args.warehouse)
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
