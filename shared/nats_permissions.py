"""Who may publish and subscribe to what on finq's NATS: one user per stage, and the operator.

One declaration for both nats-server configs: `finq up` (services/control/servers.py)
writes `authorization_block` with the passwords it made, and deploy/nats.conf holds the
same block with each password read from its environment variable (a test keeps the two
in step). Every subject comes from shared/subjects.py.

What the table guarantees:
- only the validator publishes on reply subjects, so only it can answer a gateway;
- only the gateway publishes questions;
- each stage that tells stage events publishes them under its own name only, and only the
  gateway subscribes to them (no stage reads what another decided);
- each stage publishes its own outputs, its own dead letters and failure notices, and
  acks only messages of its own durable consumer;
- only the ingest stage (which holds the embedding model) answers embedding requests, and
  only under `finq.v3.embedded.>`; only the router and the tools ask (`finq.v3.embed`), and
  each hears answers addressed to its own stage only;
- each user subscribes to its own inbox only (`_INBOX.<user>.>`, the prefix
  `shared.bus.connect` gives the client), so no stage reads another's pulled messages or
  API replies; and no stage publishes into an inbox, so none can push a forged message
  into another stage's pull subscription.

What a stage can still do through the JetStream API it is given: create or update finq's
streams (every process makes the streams at start so start order never matters; an update
could change a stream's limits), list stream names, create its own durable consumer (and
so change that consumer's settings) and pull from it. The gateway also reads the consumer
info of every consuming stage (its readiness check), and reads and deletes dead letters
for the operators' admin page (a replay publishes the saved question again, as questions
are published: the gateway never writes to another stage's input). No stage may delete a
stream or a consumer, read any other stored message directly, or purge; those belong to the
operator.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from shared.subjects import (
    ALL_SUBJECTS,
    DEAD_LETTER_STREAM,
    EMBED,
    EMBEDDED_PREFIX,
    EMBEDDING_REQUESTERS,
    EMBEDDING_SERVER,
    FAILURE_PREFIX,
    JS_STREAM_NAMES,
    REPLY_PREFIX,
    STAGE_EVENT_STAGES,
    STAGE_EVENTS_PREFIX,
    STAGE_INPUT,
    STAGE_OUTPUTS,
    STAGE_STREAMS,
    Stage,
    ack_subjects,
    consumer_api,
    dead_letter_subject,
    embedded_replies_of,
    everything_under,
    inbox_prefix,
    pull_subject,
    stage_events_of,
    stream_api,
)

# The `finq` command, benchmarks and tests: they set streams up, read dead letters and
# inspect consumers, so they get every subject.
OPERATOR = "operator"
USERS: tuple[str, ...] = (*(stage.value for stage in Stage), OPERATOR)


@dataclass(frozen=True)
class Permissions:
    """The subjects one NATS user may publish to and subscribe to (nats wildcards allowed)."""

    publish: tuple[str, ...]
    subscribe: tuple[str, ...]


def password_variable(user: str) -> str:
    """The environment variable deploy/nats.conf reads a user's password from."""
    return f"FINQ_NATS_{user.upper()}_PASSWORD"


def _stream_setup() -> tuple[str, ...]:
    """What `shared.bus.ensure_streams` asks: create each finq stream, or bring it up to
    date, and (only when an older layout overlaps) list stream names."""
    streams = (*STAGE_STREAMS.values(), DEAD_LETTER_STREAM)
    return (
        JS_STREAM_NAMES,
        *(stream_api("CREATE", stream) for stream in streams),
        *(stream_api("UPDATE", stream) for stream in streams),
    )


def _consuming(stage: Stage) -> tuple[str, ...]:
    """What a consuming stage publishes to read its input: create its durable consumer
    (nats-py's durable form and the named form newer clients use), pull, and ack; and when
    it gives up on a message, its dead letter and the gateway's failure notice."""
    return (
        consumer_api("DURABLE.CREATE", stage),
        consumer_api("CREATE", stage),
        everything_under(consumer_api("CREATE", stage)),
        pull_subject(stage),
        ack_subjects(stage),
        dead_letter_subject(stage),
        everything_under(FAILURE_PREFIX),
    )


def permission_table() -> dict[str, Permissions]:
    """Every NATS user finq has, with what it may publish and subscribe to."""
    table: dict[str, Permissions] = {}
    for stage in Stage:
        publish = [*STAGE_OUTPUTS[stage], *_stream_setup()]
        subscribe = [everything_under(inbox_prefix(stage.value))]
        if stage in STAGE_INPUT:
            publish.extend(_consuming(stage))
        if stage is Stage.VALIDATOR:
            publish.append(everything_under(REPLY_PREFIX))
        if stage is EMBEDDING_SERVER:
            # Embedding requests, and answers on the requesters' own subjects, never inboxes.
            subscribe.append(EMBED)
            publish.append(everything_under(EMBEDDED_PREFIX))
        if stage in EMBEDDING_REQUESTERS:
            publish.append(EMBED)
            subscribe.append(embedded_replies_of(stage))
        if stage in STAGE_EVENT_STAGES:
            # Its own events only: the subject's last token is the stage that told it.
            publish.append(stage_events_of(stage))
        if stage is Stage.GATEWAY:
            # Readiness: is every consuming stage pulling?
            publish.extend(consumer_api("INFO", consumer) for consumer in STAGE_INPUT)
            # The admin page: list the dead letters, and delete one once its question has been
            # published again (shared/dead_letters.py). Nothing of any other stream.
            publish.extend(
                stream_api(action, DEAD_LETTER_STREAM)
                for action in ("INFO", "MSG.GET", "MSG.DELETE")
            )
            subscribe.extend(
                (
                    everything_under(REPLY_PREFIX),
                    everything_under(FAILURE_PREFIX),
                    # Stage events: it subscribes to each streamed request's own.
                    everything_under(STAGE_EVENTS_PREFIX),
                )
            )
        table[stage.value] = Permissions(tuple(publish), tuple(subscribe))
    table[OPERATOR] = Permissions((ALL_SUBJECTS,), (ALL_SUBJECTS,))
    return table


def subject_matches(pattern: str, subject: str) -> bool:
    """Whether a NATS subject pattern (`*` one token, `>` the rest) covers a subject."""
    wanted, given = pattern.split("."), subject.split(".")
    for index, token in enumerate(wanted):
        if token == ALL_SUBJECTS:
            return len(given) > index
        if index >= len(given) or (token != "*" and token != given[index]):
            return False
    return len(wanted) == len(given)


def may_publish(user: str, subject: str) -> bool:
    return any(subject_matches(p, subject) for p in permission_table()[user].publish)


def may_subscribe(user: str, subject: str) -> bool:
    return any(subject_matches(p, subject) for p in permission_table()[user].subscribe)


def env_reference(user: str) -> str:
    """A password as deploy/nats.conf writes it: read from the environment at start."""
    return f"${password_variable(user)}"


def authorization_block(password_for: Callable[[str], str]) -> str:
    """The nats-server `authorization` block; `password_for(user)` is the password as it
    appears in the config (a quoted literal, or `env_reference(user)`)."""

    def subject_list(subjects: tuple[str, ...]) -> str:
        return "".join(f"          {json.dumps(subject)}\n" for subject in subjects)

    users = "".join(
        f"    {{\n      user: {json.dumps(user)}\n      password: {password_for(user)}\n"
        "      permissions: {\n"
        f"        publish: {{allow: [\n{subject_list(permissions.publish)}        ]}}\n"
        f"        subscribe: {{allow: [\n{subject_list(permissions.subscribe)}        ]}}\n"
        "      }\n    }\n"
        for user, permissions in permission_table().items()
    )
    return f"authorization {{\n  users = [\n{users}  ]\n}}\n"
