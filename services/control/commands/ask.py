"""`finq ask QUESTION`: one question to the running gateway, its answer printed with its
citations and validation (or the whole response with --json)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx

from services.control.answer_rendering import render_answer
from services.control.commands import Subparsers
from services.control.commands.demo_user import DEMO_KEY_FILE
from services.control.commands.state_file import read_state
from services.control.settings import ControlSettings


def register(subparsers: Subparsers) -> None:
    ask = subparsers.add_parser("ask", help="ask a question")
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="print the whole response as JSON")
    ask.add_argument("--conversation", default=None, help="continue this conversation id")
    ask.add_argument("--timeout", type=float, default=60.0)
    add_ask_identity(ask)
    ask.set_defaults(handler=command_ask)


def add_ask_identity(ask: argparse.ArgumentParser) -> None:
    """`finq ask --key KEY` or `--demo`: ask as a user with a key (the demo user's, which
    `finq up` keeps), instead of as the local user."""
    who = ask.add_mutually_exclusive_group()
    who.add_argument("--key", default=None, help="ask as the user of this API key")
    who.add_argument(
        "--demo", action="store_true", help="ask as the demo user (its key from FINQ_HOME)"
    )


def ask_headers(args: argparse.Namespace, settings: ControlSettings) -> dict[str, str]:
    """The Authorization header `finq ask` sends, if any; SystemExit with a reason when
    --demo finds no key."""
    key: str | None = args.key
    if args.demo:
        path = settings.home.resolve() / DEMO_KEY_FILE
        if not path.exists():
            sys.exit(f"no demo key at {path}: `finq up` (or `finq portfolio demo`) makes it")
        key = path.read_text().strip()
    return {"Authorization": f"Bearer {key}"} if key else {}


def command_ask(args: argparse.Namespace, settings: ControlSettings) -> int:
    """Ask the gateway `finq up` runs (or FINQ_URL's); exit 1 when it cannot be reached or
    refuses the question."""
    state = read_state(settings)
    url = settings.url or (state["url"] if state else "http://127.0.0.1:8000")
    body = {"question": args.question, "conversation_id": args.conversation}
    try:
        response = httpx.post(
            f"{url}/v1/ask", json=body, headers=ask_headers(args, settings), timeout=args.timeout
        )
    except httpx.HTTPError as error:
        print(f"could not reach finq at {url}: {error}", file=sys.stderr)
        return 1
    data = response.json()
    if args.json:
        print(json.dumps(data, indent=2))
        return 0 if response.is_success else 1
    if not response.is_success:
        print(f"error {response.status_code} {data.get('code')}: {data.get('message')}")
        return 1
    print_answer(data)
    return 0


def print_answer(data: dict[str, Any]) -> None:
    """An answered /v1/ask body as `finq ask` prints it: the answer, its table and how its
    figures were computed, its numbered citations, and whether it was validated."""
    render_answer(data)
