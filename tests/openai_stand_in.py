"""A scripted OpenAI-protocol server on loopback, for driving finq's LLM paths through the
real `openai` client: POST /v1/chat/completions answers from a queue of scripted replies
(text, tool calls, a delay, an HTTP error), as one JSON body or, asked with `stream: true`,
as server-sent chunks, and records every request it received;
POST /v1/embeddings answers with vectors made from the texts' words (the same words, the
same vector), in reverse order, as a server may."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from services.control.servers import free_port
from tests.helpers import wait_until


def word_vector(text: str, dimensions: int) -> list[float]:
    """Each word counts in one dimension chosen by its hash: texts sharing words point the
    same way, which is all a search test needs of an embedding."""
    vector = [0.0] * dimensions
    for word in text.lower().split():
        digest = hashlib.blake2b(word.strip(".,?!:;").encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "big") % dimensions] += 1.0
    return vector


@dataclass
class ScriptedReply:
    """One chat completion: assistant text, or tool calls as (name, arguments) where the
    arguments are a dict (sent as JSON) or a raw string (to send malformed JSON)."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    delay_seconds: float = 0.0
    status: int = 200  # anything else is sent as an OpenAI-style error body
    prompt_tokens: int = 50
    completion_tokens: int = 10
    # Asked with `stream: true`: the content goes in chunks of this many characters, this
    # long apart (a model writes a few tokens at a time).
    chunk_chars: int = 12
    chunk_delay_seconds: float = 0.0


class OpenAIStandIn:
    """`async with OpenAIStandIn([ScriptedReply(...)]) as server:` then point an
    `openai.AsyncOpenAI(base_url=server.base_url, api_key="test")` at it."""

    def __init__(self, replies: list[ScriptedReply]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.port = free_port()
        self._ids = itertools.count(1)
        self.embedding_requests: list[dict[str, Any]] = []
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._complete, methods=["POST"]),
                Route("/v1/embeddings", self._embed, methods=["POST"]),
            ]
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._task: asyncio.Task[None] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> OpenAIStandIn:
        task = self._task = asyncio.create_task(self._server.serve())
        await wait_until(lambda: self._server.started or task.done(), within=30)
        if task.done():
            await task  # raises what stopped it
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.should_exit = True
        if self._task is not None:
            await self._task

    async def _embed(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.embedding_requests.append(body)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dimensions = int(body.get("dimensions") or 64)
        data = [
            {"object": "embedding", "index": index, "embedding": word_vector(text, dimensions)}
            for index, text in enumerate(texts)
        ]
        return JSONResponse(
            {
                "object": "list",
                "data": data[::-1],
                "model": body.get("model", "scripted"),
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            }
        )

    async def _complete(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        # A model calls tools only when it is offered them: a request without tools (the
        # answerer's, or a late redelivered duplicate of one) leaves the tool calls scripted
        # for the router's next request in the queue.
        offered_tools = bool(body.get("tools"))
        fitting = [n for n, r in enumerate(self.replies) if offered_tools or not r.tool_calls]
        if not fitting:
            return JSONResponse(
                {"error": {"message": "no scripted reply left", "type": "server_error"}},
                status_code=500,
            )
        reply = self.replies.pop(fitting[0])
        if reply.delay_seconds:
            await asyncio.sleep(reply.delay_seconds)
        if reply.status != 200:
            return JSONResponse(
                {"error": {"message": "scripted failure", "type": "server_error"}},
                status_code=reply.status,
            )
        tool_calls = [
            {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for name, arguments in reply.tool_calls
        ]
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(
                self._chunks(body, reply, tool_calls, include_usage),
                media_type="text/event-stream",
            )
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return JSONResponse(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "scripted"),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                    }
                ],
                "usage": usage_of(reply),
            }
        )

    async def _chunks(
        self,
        body: dict[str, Any],
        reply: ScriptedReply,
        tool_calls: list[dict[str, Any]],
        include_usage: bool,
    ) -> AsyncIterator[bytes]:
        """The reply as a streaming server sends it: `chat.completion.chunk`s (the role, the
        content a few characters at a time, the tool calls, the finish reason), the usage
        when asked for, then [DONE]."""
        reply_id = f"chatcmpl-{next(self._ids)}"

        def chunk(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> bytes:
            data = {
                "id": reply_id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body.get("model", "scripted"),
                "choices": choices,
                "usage": usage,
            }
            return f"data: {json.dumps(data)}\n\n".encode()

        def delta(fields: dict[str, Any], finish_reason: str | None = None) -> bytes:
            return chunk([{"index": 0, "delta": fields, "finish_reason": finish_reason}])

        yield delta({"role": "assistant", "content": ""})
        content = reply.content or ""
        for start in range(0, len(content), max(1, reply.chunk_chars)):
            if reply.chunk_delay_seconds:
                await asyncio.sleep(reply.chunk_delay_seconds)
            yield delta({"content": content[start : start + reply.chunk_chars]})
        if tool_calls:
            yield delta({"tool_calls": [{"index": n, **call} for n, call in enumerate(tool_calls)]})
        yield delta({}, "tool_calls" if tool_calls else "stop")
        if include_usage:
            yield chunk([], usage_of(reply))
        yield b"data: [DONE]\n\n"


def usage_of(reply: ScriptedReply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
