"""Command-line front end: ``workbench-cli inspect|quantize|evaluate ...`` (same verbs as the app)."""

from __future__ import annotations

import argparse
import sys

from workbench import __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="workbench-cli", description=__doc__)
    p.add_argument("--version", action="version", version=f"workbench {__version__}")
    p.add_subparsers(dest="command")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
