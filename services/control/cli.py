"""The `finq` command's entry point: the parser built from the command groups' registry, and
the chosen command's handler run. The commands themselves are in services/control/commands/."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from services.control.commands import (
    Handler,
    Subparsers,
    aliases,
    ask,
    companies,
    data,
    dead,
    evaluate,
    ingest,
    lifecycle,
    migrate,
    portfolio,
    train,
    users,
)
from services.control.settings import ControlSettings

# `finq --help`'s description.
DESCRIPTION = (
    "`finq`: up, down, status, ask, migrate, ingest, data check, aliases and dead letters."
)

# Each command group's `register`, in the order `finq --help` lists their commands. A new
# group is one more line here (and its import above).
COMMAND_GROUPS: tuple[Callable[[Subparsers], None], ...] = (
    lifecycle.register,  # up, down, status
    ask.register,
    migrate.register,
    ingest.register,
    data.register,
    companies.register,
    users.register,
    portfolio.register,
    aliases.register,
    dead.register,
    evaluate.register,  # eval
    train.register,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="finq", description=DESCRIPTION)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for register in COMMAND_GROUPS:
        register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # Every command's parser names its handler (set_defaults(handler=...)).
    handler: Handler = args.handler
    return handler(args, ControlSettings())


if __name__ == "__main__":
    sys.exit(main())
