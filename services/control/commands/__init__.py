"""`finq`'s commands, one module per command group, each with `register(subparsers)`: it adds
its commands to `finq`'s subcommands and names each command's handler with
`set_defaults(handler=...)`. services/control/cli.py lists the groups in its registry.

Modules of what several groups share sit beside the groups: database_setup, gateway_readiness,
state_file, named_users, demo_user.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from services.control.settings import ControlSettings

# What a group's `register` is handed: `finq`'s subcommands, to add its own commands to.
# (A string: argparse's class is generic only to type checkers.)
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
# What each command's parser holds as `handler`: it runs the command and returns the exit code.
Handler: TypeAlias = Callable[[argparse.Namespace, "ControlSettings"], int]
