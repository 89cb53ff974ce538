"""A real MCP server for Switchyard's tests (the Python `mcp` package's FastMCP), over stdio or streamable HTTP.

    python server.py stdio
    python server.py http PORT      # serves http://127.0.0.1:PORT/mcp
    python server.py stdio-paged    # tools/list answers two tools per page, with a cursor

With SWITCHYARD_TEST_CALLS naming a file, each call of `add` is recorded there (record_call).
"""
import asyncio
import json
import os
import sys

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations

port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
server = FastMCP("switchyard-test", host="127.0.0.1", port=port, log_level="WARNING")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int, ctx: Context) -> int:
    """Add two whole numbers."""
    record_call({"a": a, "b": b}, ctx)
    return a + b


def record_call(arguments, ctx):
    """When SWITCHYARD_TEST_CALLS names a file (set by a test), appends a JSON line to it: the call's arguments, its
    idempotency key from the request's _meta (`key`) and, over HTTP, its Idempotency-Key header (`header`)."""
    path = os.environ.get("SWITCHYARD_TEST_CALLS")
    if not path:
        return
    meta = ctx.request_context.meta
    request = ctx.request_context.request
    line = dict(arguments)
    line["key"] = (meta.model_extra or {}).get("switchyard/idempotencyKey") if meta else None
    line["header"] = request.headers.get("idempotency-key") if request is not None else None
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ValueError(reason)


@server.tool()
async def hang(seconds: float = 3600) -> str:
    """Answers after `seconds` (an hour by default)."""
    await asyncio.sleep(seconds)
    return "late"


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def delete_everything(confirm: bool) -> str:
    """Pretends to delete everything."""
    return "deleted" if confirm else "kept"


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def write_file(path: str, text: str) -> str:
    """Writes the text to the file at path."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return "written"


@server.tool()
async def tally(path: str, n: int, ctx: Context, hold_file: str = "") -> str:
    """Appends a line to the file at path: n and the call's idempotency key (from the request's _meta). When
    hold_file holds n, removes it and then waits an hour: a call in flight, for a test to stop the client during it."""
    meta = ctx.request_context.meta
    key = (meta.model_extra or {}).get("switchyard/idempotencyKey", "") if meta else ""
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{n} {key}\n")
    if hold_file and os.path.exists(hold_file):
        with open(hold_file, encoding="utf-8") as f:
            held = f.read().strip()
        if held == str(n):
            os.remove(hold_file)
            await asyncio.sleep(3600)
    return f"tallied {n}"


@server.tool()
def crash() -> str:
    """Ends the server process at once."""
    os._exit(3)


def paginate(page_size):
    """Replaces FastMCP's tools/list (which sends every tool at once) with one that answers a page at a time."""
    from mcp import types

    @server._mcp_server.list_tools()
    async def list_tools(request: types.ListToolsRequest) -> types.ListToolsResult:
        tools = await server.list_tools()
        cursor = request.params.cursor if request.params else None
        start = int(cursor) if cursor else 0
        end = start + page_size
        return types.ListToolsResult(tools=tools[start:end], nextCursor=str(end) if end < len(tools) else None)


if __name__ == "__main__":
    if sys.argv[1] == "stdio-paged":
        paginate(2)
    server.run(transport="streamable-http" if sys.argv[1] == "http" else "stdio")
