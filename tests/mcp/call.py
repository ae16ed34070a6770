#!/usr/bin/env python3
"""Calls MCP tools of mem-host with the official Python SDK, in one session.

Usage:
    call.py http <url> <token> <calls.json>
    call.py stdio <calls.json> -- <command> [args...]

<calls.json> is a JSON list of [tool, arguments] pairs. Prints ONE JSON list
on stdout: for each call {"is_error": bool, "result": <the tool's JSON>}.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def run(session: ClientSession, calls: list[list[Any]]) -> list[dict[str, Any]]:
    await session.initialize()
    out = []
    for tool, args in calls:
        r = await session.call_tool(tool, args)
        if isinstance(r.structured_content, dict):
            result = r.structured_content
        else:
            result = json.loads(text_of(r))
        out.append({"is_error": bool(r.is_error), "result": result})
    return out


async def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "http":
        from mcp.shared._httpx_utils import create_mcp_http_client

        calls = json.loads(open(argv[3]).read())
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {argv[2]}"})
        async with client:
            async with streamable_http_client(argv[1], http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    out = await asyncio.wait_for(run(session, calls), timeout=120)
    elif len(argv) >= 4 and argv[0] == "stdio" and argv[2] == "--":
        calls = json.loads(open(argv[1]).read())
        params = StdioServerParameters(command=argv[3], args=argv[4:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                out = await asyncio.wait_for(run(session, calls), timeout=120)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
