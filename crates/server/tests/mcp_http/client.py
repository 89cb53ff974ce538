"""A real MCP client (the Python `mcp` SDK over Streamable HTTP) against a server's `/mcp`, for
crates/server/tests/mcp_http.rs.

    python client.py SCENARIO URL TOKEN

plays SCENARIO and prints one JSON object: what the client saw. The Rust test asserts on it.
"""

import asyncio
import json
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client

scenario, url, token = sys.argv[1:]


def result_json(r):
    return {"isError": r.isError, "text": [c.text for c in r.content if c.type == "text"],
            "structured": r.structuredContent}


async def main():
    seen = {"progress": [], "asked": []}

    async def progress(value, total, message):
        seen["progress"].append({"progress": value, "message": message})

    async def elicit(context, params):
        seen["asked"].append({"message": params.message, "schema": params.requestedSchema})
        return types.ElicitResult(action="accept", content={"decision": "approve", "note": "ship it"})

    callback = elicit if scenario == "approve" else None
    async with streamablehttp_client(f"{url}/mcp", headers={"Authorization": f"Bearer {token}"}) as (read, write, _):
        async with ClientSession(read, write, elicitation_callback=callback) as session:
            init = await session.initialize()
            seen["protocol"] = init.protocolVersion
            seen["tools"] = [t.name for t in (await session.list_tools()).tools]
            r = await session.call_tool("publish_with_approval", {"message": "Dark mode ships"},
                                        progress_callback=progress)
            seen["call"] = result_json(r)
    print(json.dumps(seen))


asyncio.run(main())
