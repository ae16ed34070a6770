#!/usr/bin/env python3
"""End-to-end MCP client for mem-host, built on the official Python SDK.

Usage:
    client.py stdio -- <command> [args...]   launch the server and talk over stdio
    client.py http <url> <token>             talk streamable HTTP with a bearer token

Runs initialize, tools/list, mem_remember, mem_search, mem_context,
resources/read of the remembered memory, mem_put of a note and a search for
it right after (read-your-writes), and mem_forget without confirm
(which must fail as a tool error), then prints ONE JSON object summarising
what happened on stdout. Exits non-zero on anything unexpected.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


class Unexpected(Exception):
    pass


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def call(session: ClientSession, name: str, args: dict[str, Any]) -> Any:
    """A tool call that must succeed; returns its JSON."""
    result = await session.call_tool(name, args)
    if result.is_error:
        raise Unexpected(f"{name} failed: {text_of(result)}")
    if isinstance(result.structured_content, dict):
        return result.structured_content
    return json.loads(text_of(result))


async def scenario(session: ClientSession) -> dict[str, Any]:
    init = await session.initialize()
    tools = await session.list_tools()
    tool_names = sorted(t.name for t in tools.tools)

    key = f"e2e-{uuid.uuid4()}"
    remembered = await call(
        session,
        "mem_remember",
        {
            "content": "The deploy window is Tuesday 14:00 UTC",
            "kind": "decision",
            "path": "/ops",
            "idempotency_key": key,
            "agent_id": "e2e-client",
        },
    )
    memory = remembered.get("memory")
    if not isinstance(memory, dict) or not memory.get("id"):
        raise Unexpected(f"mem_remember stored no memory: {remembered}")
    memory_id = memory["id"]

    search = await call(session, "mem_search", {"query": "deploy window"})
    # A period named in the query is read and reported; the memory written
    # just now is from it.
    dated = await call(session, "mem_search", {"query": "deploy window decided this year"})
    context = await call(session, "mem_context", {"query": "when can we deploy?"})
    citations = [
        item["citation"]
        for lane in ("must", "should", "context", "provisional", "conflict")
        for item in context.get(lane, [])
    ]

    resource = await session.read_resource(f"mem://memory/{memory_id}")
    resource_text = "".join(getattr(c, "text", "") for c in resource.contents)

    put = await call(
        session,
        "mem_put",
        {
            "path": f"/notes/runbook-{uuid.uuid4().hex[:8]}.md",
            "content": "# Runbook\n\nRotate the zeppelin certificates every quarter.\n",
        },
    )
    put_search = await call(session, "mem_search", {"query": "zeppelin certificates"})

    forget = await session.call_tool(
        "mem_forget",
        {"id": memory_id, "expected_version": memory["state_version"], "reason": "e2e"},
    )
    if not forget.is_error:
        raise Unexpected(f"mem_forget without confirm succeeded: {text_of(forget)}")
    forget_error = json.loads(text_of(forget))

    return {
        "protocol_version": init.protocol_version,
        "server_name": init.server_info.name,
        "instructions": init.instructions,
        "tools": tool_names,
        "remember": remembered,
        "search_hit_ids": [h["id"] for h in search.get("hits", [])],
        "dated_search_period": dated.get("period", {}).get("text"),
        "dated_search_in_period_ids": [h["id"] for h in dated.get("hits", []) if h.get("in_period")],
        "context_citations": citations,
        "resource_text": resource_text,
        "put": put,
        "put_search_hit_ids": [h["id"] for h in put_search.get("hits", [])],
        "forget_error": forget_error,
    }


@asynccontextmanager
async def stdio_session(argv: list[str]) -> AsyncIterator[ClientSession]:
    if not argv:
        raise SystemExit("usage: client.py stdio -- <command> [args...]")
    # The SDK passes only a minimal environment by default; the server needs
    # ours (MEM_HOME, MEM_TOKEN, model locations).
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            yield session


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    from mcp.shared._httpx_utils import create_mcp_http_client

    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                yield session


async def main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "stdio":
        rest = argv[1:]
        if rest and rest[0] == "--":
            rest = rest[1:]
        opener = stdio_session(rest)
    elif len(argv) == 3 and argv[0] == "http":
        opener = http_session(argv[1], argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    async with opener as session:
        summary = await asyncio.wait_for(scenario(session), timeout=120)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main(sys.argv[1:])))
    except Unexpected as e:
        print(f"unexpected: {e}", file=sys.stderr)
        sys.exit(1)
