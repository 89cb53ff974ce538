"""A real MCP client (the Python `mcp` SDK over stdio) against `switchyard mcp serve`, for crates/cli/tests/mcp_serve.rs.

    python client.py SCENARIO SWITCHYARD HOME ARGS...

starts `SWITCHYARD mcp serve ARGS...` with SWITCHYARD_HOME=HOME (its run store and settings), plays SCENARIO and
prints one JSON object: what the client saw. The Rust test asserts on it.
"""

import asyncio
import json
import os
import re
import subprocess
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

scenario, switchyard, home, *serve_args = sys.argv[1:]
env = dict(os.environ, SWITCHYARD_HOME=home, SWITCHYARD_LOCAL_URL="http://127.0.0.1:9/v1")


def cli(*args):
    """Runs the switchyard CLI in the same home (another terminal, as a person would)."""
    done = subprocess.run([switchyard, *args], env=env, capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def tool_json(t):
    return {"name": t.name, "title": t.title, "description": t.description, "inputSchema": t.inputSchema,
            "outputSchema": t.outputSchema}


def result_json(r):
    return {"isError": r.isError, "text": [c.text for c in r.content if c.type == "text"],
            "structured": r.structuredContent}


async def cancelled_call(session, seen):
    """A call cancelled while its run waits for a decision: a cancelled call gets no answer, so the run's status in
    the store is read until it ends (at most a minute)."""
    async with anyio.create_task_group() as calls:
        calls.start_soon(session.call_tool, "publish_with_approval", {"message": "Dark mode ships"})
        with anyio.fail_after(60):
            while "run" not in seen:
                await anyio.sleep(0.05)
            while True:
                status = json.loads(cli("show", seen["run"], "--json")[1])["status"]
                if status not in ("paused", "running"):
                    break
                await anyio.sleep(0.1)
        seen["status"] = status
        calls.cancel_scope.cancel()


async def main():
    seen = {"progress": [], "asked": []}
    server = StdioServerParameters(command=switchyard, args=["mcp", "serve", *serve_args], env=env)

    async def progress(value, total, message):
        seen["progress"].append({"progress": value, "message": message})

    async def elicit(context, params):
        seen["asked"].append({"message": params.message, "schema": params.requestedSchema})
        if scenario == "approve":
            return types.ElicitResult(action="accept", content={"decision": "approve", "note": "ship it"})
        if scenario == "reject":
            return types.ElicitResult(action="accept", content={"decision": "reject", "note": "say when"})
        if scenario == "decided-elsewhere":
            # Someone decides in another terminal while the question is open; then this person rejects, too late.
            run_id = re.search(r"\(run (\S+), approval", params.message).group(1)
            seen["elsewhere"] = cli("resume", run_id, "--decide", "review=approve", "--json")[0]
            return types.ElicitResult(action="accept", content={"decision": "reject", "note": "too late"})
        if scenario == "cancel":
            # The person gives up on the call: the client cancels it (its request id: initialize 0, tools/list 1,
            # tools/call 2), and the question goes unanswered.
            seen["run"] = re.search(r"\(run (\S+), approval", params.message).group(1)
            cancel = types.CancelledNotification(params=types.CancelledNotificationParams(requestId=2))
            await context.session.send_notification(types.ClientNotification(cancel))
            return types.ElicitResult(action="cancel")
        raise AssertionError(f"no question expected in {scenario}")

    callback = None if scenario in ("list-and-call", "no-elicitation") else elicit
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, elicitation_callback=callback) as session:
            init = await session.initialize()
            seen["protocol"] = init.protocolVersion
            seen["tools"] = [tool_json(t) for t in (await session.list_tools()).tools]
            if scenario == "list-and-call":
                r = await session.call_tool("classify_a_request", {"request": "the app crashes on start"},
                                            progress_callback=progress)
                seen["call"] = result_json(r)
                r = await session.call_tool("echo", {"message": "hello"})
                seen["echo"] = result_json(r)
                seen["mismatch"] = result_json(await session.call_tool("classify_a_request", {}))
                seen["code"] = result_json(await session.call_tool("count_rows", {}))
            else:
                if scenario == "cancel":
                    await cancelled_call(session, seen)
                    print(json.dumps(seen))
                    return
                r = await session.call_tool("publish_with_approval", {"message": "Dark mode ships"},
                                            progress_callback=progress)
                seen["call"] = result_json(r)
                if scenario == "no-elicitation":
                    run_id = r.structuredContent["runId"]
                    code, out, err = cli("resume", run_id, "--decide", "review=approve", "--json")
                    seen["resumed"] = {"code": code, "result": json.loads(out) if out.strip() else err}
    print(json.dumps(seen))


asyncio.run(main())
