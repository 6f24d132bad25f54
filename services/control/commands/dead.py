"""`finq dead list` and `finq dead replay ID...`: the dead-letter stream, the messages a stage
gave up on, read and published again as the NATS operator."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pydantic import SecretStr

from services.control.commands import Subparsers
from services.control.commands.state_file import read_state
from services.control.servers import NatsServer, ServerError
from services.control.settings import ControlSettings
from shared.subjects import Stage

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient
    from nats.js import JetStreamContext

    from shared.dead_letters import DeadLetter, Replayed

# How long `finq dead` waits for nats-server before it says it cannot reach it.
NATS_CONNECT_TIMEOUT_SECONDS = 10.0


def register(subparsers: Subparsers) -> None:
    dead = subparsers.add_parser(
        "dead", help="the dead-letter stream: messages a stage gave up on, and their replay"
    )
    dead_commands = dead.add_subparsers(dest="dead_command", required=True)
    dead_list = dead_commands.add_parser(
        "list", help="dead letters, oldest first: id, stage, request, when, reason"
    )
    dead_list.add_argument("--stage", choices=[stage.value for stage in Stage])
    dead_list.add_argument("--limit", type=int, default=100, help="the newest N (default 100)")
    dead_list.add_argument("--json", action="store_true")
    dead_list.set_defaults(handler=command_dead_list)
    dead_replay = dead_commands.add_parser(
        "replay",
        help="publish dead letters again onto their original subjects, then remove them",
        description="Each dead letter's original message is published again onto its "
        "original subject with a message id of its own (<original id>:replay-<ID>) and "
        "removed from the dead letters; one that dies again is dead-lettered anew, with a "
        "new id. An envelope whose deadline passed gets a new one (--deadline-seconds).",
    )
    dead_replay.add_argument("seqs", nargs="+", type=int, metavar="ID")
    dead_replay.add_argument(
        "--deadline-seconds",
        type=float,
        default=60.0,
        help="a deadline that passed is moved this far from now (default 60)",
    )
    dead_replay.add_argument(
        "--keep-deadline", action="store_true", help="publish the message exactly as it was"
    )
    dead_replay.set_defaults(handler=command_dead_replay)
    for dead_command in (dead_list, dead_replay):
        dead_command.add_argument(
            "--timeout",
            type=float,
            default=NATS_CONNECT_TIMEOUT_SECONDS,
            help="seconds to wait for nats-server (default 10)",
        )


def command_dead_list(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq dead list [--stage S] [--limit N] [--json]`."""
    from shared.dead_letters import list_dead_letters

    letters: list[DeadLetter] = []

    async def read(js: JetStreamContext) -> None:
        letters.extend(await list_dead_letters(js, args.stage, args.limit))

    code = on_the_dead_letters(settings, args.timeout, read)
    if code != 0:
        return code
    if args.json:
        print(json.dumps([letter.to_json() for letter in letters], indent=2))
        return 0
    if not letters:
        print("no dead letters")
        return 0
    print(f"{'id':>6}  {'stage':<10} {'request':<34} {'when (UTC)':<19} reason")
    for letter in letters:
        when = f"{letter.dead_at:%Y-%m-%d %H:%M:%S}" if letter.dead_at else "-"
        print(
            f"{letter.seq:>6}  {letter.stage or '-':<10} {letter.request_id or '-':<34} "
            f"{when:<19} {letter.reason}"
        )
    return 0


def command_dead_replay(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq dead replay ID... [--deadline-seconds S | --keep-deadline]`: each replay said as
    it is done, so those before a refusal are known."""
    from shared.dead_letters import replay_dead_letter

    async def replay(js: JetStreamContext) -> None:
        for seq in args.seqs:
            replayed = await replay_dead_letter(js, seq, args.deadline_seconds, args.keep_deadline)
            print(describe_replay(replayed), flush=True)

    return on_the_dead_letters(settings, args.timeout, replay)


def on_the_dead_letters(
    settings: ControlSettings,
    patience: float,
    action: Callable[[JetStreamContext], Awaitable[None]],
) -> int:
    """Run `action` on JetStream as the operator: exit 0; 2 when NATS cannot be reached or
    refuses the credentials, 1 when a dead letter is refused (not there, say), each said on
    stderr as `finq dead: ...`."""
    from shared.dead_letters import DeadLetterError

    async def run() -> None:
        nc = await connect_as_operator(settings, patience)
        try:
            await action(nc.jetstream())
        finally:
            await nc.close()

    try:
        asyncio.run(run())
    except ServerError as error:
        print(f"finq dead: {error}", file=sys.stderr)
        return 2
    except DeadLetterError as error:
        print(f"finq dead: {error}", file=sys.stderr)
        return 1
    return 0


def operator_nats(settings: ControlSettings) -> tuple[str, str | None, SecretStr | None]:
    """Where and as whom the operator's commands connect to NATS: FINQ_NATS_URL (else the
    broker of `finq up`'s state file, else FINQ_NATS_PORT on loopback), as FINQ_NATS_USER
    with FINQ_NATS_PASSWORD, else as `operator` with the password `finq up` keeps in the
    home folder (FINQ_HOME), else without credentials."""
    from shared.nats_permissions import OPERATOR

    state = read_state(settings)
    if "nats_url" in settings.model_fields_set:
        url = settings.nats_url
    elif state is not None and state.get("nats_url"):
        url = str(state["nats_url"])
    else:
        url = f"nats://127.0.0.1:{settings.nats_port}"
    if settings.nats_user:
        return url, settings.nats_user, settings.nats_password
    server = NatsServer(settings.home.resolve() / "nats", settings.nats_port)
    password = server.stored_password(OPERATOR)
    if password is None:
        return url, None, None
    return url, OPERATOR, SecretStr(password)


async def connect_as_operator(
    settings: ControlSettings, patience: float = NATS_CONNECT_TIMEOUT_SECONDS
) -> NatsClient:
    """A NATS client for the operator's commands; ServerError when the broker does not
    answer within `patience` seconds or refuses the credentials."""
    from shared import bus

    url, user, password = operator_nats(settings)
    errors: list[Exception] = []

    async def remember(error: Exception) -> None:
        # Not logged: the command says what went wrong once, at the end.
        errors.append(error)

    try:
        async with asyncio.timeout(patience):
            return await bus.connect(url, "finq-cli", user, password, error_cb=remember)
    except TimeoutError:
        last = f": {errors[-1]}" if errors else ""
        raise ServerError(f"cannot reach NATS at {url}{last}") from None
    except bus.NatsRefused as error:
        raise ServerError(f"{error} (set FINQ_NATS_USER and FINQ_NATS_PASSWORD)") from None


def describe_replay(replayed: Replayed) -> str:
    deadline = (
        f"; its deadline had passed, the new one is {replayed.new_deadline:%H:%M:%S} UTC"
        if replayed.new_deadline
        else ""
    )
    return (
        f"replayed dead letter {replayed.seq} onto {replayed.subject} "
        f"({replayed.stream} #{replayed.stream_seq}, message id {replayed.msg_id}){deadline}; "
        "removed it from the dead letters"
    )
