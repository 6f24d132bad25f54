"""`finq`'s parser is built from the command groups' registry (services/control/cli.py): every
command a user can type ends at a handler, and the groups list their commands in one order."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from services.control.cli import COMMAND_GROUPS, build_parser


def commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Each command's words (`("dead", "list")`) and its parser, leaves only."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        yield words, parser
    for action in subparsers:
        for name, child in action.choices.items():
            yield from commands(child, (*words, name))


def test_every_command_has_a_handler() -> None:
    leaves = dict(commands(build_parser()))
    assert ("dead", "replay") in leaves and ("up",) in leaves
    for words, parser in leaves.items():
        assert callable(parser.get_default("handler")), f"finq {' '.join(words)} has no handler"


def test_the_commands_are_listed_in_the_registry_order() -> None:
    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(top.choices) == [
        *("up", "down", "status", "ask", "migrate", "ingest", "data", "companies", "users"),
        "portfolio",
        *("aliases", "dead", "eval", "train"),
    ]
    assert len(set(COMMAND_GROUPS)) == len(COMMAND_GROUPS)


def test_a_command_line_reaches_its_own_handler() -> None:
    from services.control.commands.dead import command_dead_replay
    from services.control.commands.users import command_users_revoke

    parser = build_parser()
    assert parser.parse_args(["users", "revoke", "bob"]).handler is command_users_revoke
    replay = parser.parse_args(["dead", "replay", "3", "4", "--keep-deadline"])
    assert replay.handler is command_dead_replay
    assert replay.seqs == [3, 4]
