// The HTTP transport under the generated client, against a stand-in for the server's HTTP answers: the request each
// command makes, every way a request can fail, and a followed run's event stream across a dropped connection. The
// real server and browser are driven end to end by e2e/browser/serve.test.mjs.
import { beforeEach, describe, expect, test, vi } from "vitest";
import { Channel, invoke } from "@tauri-apps/api/core";
import { commands } from "../bindings";
import { installServerTransport, keepToken, onReachability, onServer, onSignInNeeded, watchServer } from "./index";

type Sent = { url: string; init: RequestInit };
let sent: Sent[] = [];
let answer: (url: string, init: RequestInit) => Promise<Response>;

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
/** A Server-Sent Events body that ends (the connection drops) after `text`. */
const sse = (text: string) => new Response(new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode(text)), c.close()) }), { status: 200, headers: { "content-type": "text/event-stream" } });
const event = (seq: number) => `id: ${seq}\nevent: node:enter\ndata: ${JSON.stringify({ seq, run: "r1", ts: "", type: "node:enter", node: "a" })}\n\n`;

beforeEach(() => {
  sent = [];
  localStorage.clear();
  keepToken("sy_test");
  vi.stubGlobal("fetch", (url: string, init: RequestInit = {}) => {
    sent.push({ url, init });
    return answer(url, init);
  });
  installServerTransport("http://server");
});

describe("the server transport", () => {
  test("a command is POST /api/commands/NAME with its arguments and the token, and answers with the server's value", async () => {
    answer = async () => json(200, [{ id: "r1", status: "paused", live: false }]);
    const r = await commands.listRuns(null);
    expect(onServer()).toBe(true);
    expect(r).toEqual({ status: "ok", data: [{ id: "r1", status: "paused", live: false }] });
    expect(sent[0].url).toBe("http://server/api/commands/list_runs");
    expect(sent[0].init.method).toBe("POST");
    expect((sent[0].init.headers as Record<string, string>).authorization).toBe("Bearer sy_test");
    answer = async () => json(200, null);
    await commands.decide("r1", "review", "approve", "fine");
    expect(JSON.parse(String(sent[1].init.body))).toEqual({ runId: "r1", node: "review", decision: "approve", note: "fine" });
  });

  test("a refusal reaches the caller as the server's {code, message}", async () => {
    answer = async () => json(409, { code: "CHANGED_HERE", message: "this canvas has changes" });
    const r = await commands.cancelRun("r1");
    expect(r).toEqual({ status: "error", error: { code: "CHANGED_HERE", message: "this canvas has changes" } });
  });

  test("a server that does not answer is SERVER_UNREACHABLE, saying what to check", async () => {
    answer = async () => {
      throw new TypeError("Failed to fetch");
    };
    const r = await commands.listRuns(null);
    expect(r.status).toBe("error");
    expect(r.status === "error" && r.error.code).toBe("SERVER_UNREACHABLE");
    expect(r.status === "error" && r.error.message).toMatch(/switchyard serve running/);
  });

  test("a refused token asks the person to sign in again", async () => {
    const heard: string[] = [];
    const stop = onSignInNeeded((why) => heard.push(why));
    answer = async () => json(401, { code: "UNAUTHORIZED", message: "this token is not valid: it was revoked" });
    const r = await commands.listRuns(null);
    stop();
    expect(r.status === "error" && r.error.code).toBe("UNAUTHORIZED");
    expect(heard).toEqual(["this token is not valid: it was revoked"]);
  });

  test("opening a file of this computer is refused with where to open workflows instead, before any request", async () => {
    await expect(invoke("plugin:dialog|open", { options: {} })).rejects.toMatchObject({ code: "NOT_ON_SERVER", message: expect.stringMatching(/\?workflow=NAME/) });
    expect(sent).toEqual([]);
  });

  test("preferences are this browser's own: kept in its storage, never sent to the server", async () => {
    const r = await commands.loadPrefs();
    expect(r).toMatchObject({ recentFiles: [], theme: "light" });
    await commands.savePrefs({ recentFiles: [], theme: "dark" });
    expect(await commands.loadPrefs()).toMatchObject({ recentFiles: [], theme: "dark" });
    expect(sent).toEqual([]);
  });

  test("the page's ?workflow=NAME goes with each command, for startup_file to open", async () => {
    history.replaceState(null, "", "/?workflow=gate%20two");
    answer = async () => json(200, { path: "/srv/gate two.yaml", answersPath: null });
    try {
      expect(await commands.startupFile()).toEqual({ path: "/srv/gate two.yaml", answersPath: null });
    } finally {
      history.replaceState(null, "", "/");
    }
    expect(sent[0].url).toBe("http://server/api/commands/startup_file?workflow=gate%20two");
    answer = async () => json(200, []);
    await commands.listRuns(null);
    expect(sent[1].url).toBe("http://server/api/commands/list_runs");
  });

  test("a started run's events come from the run's event stream into the channel", async () => {
    const replies = [json(200, "r9"), sse(event(1) + "event: end\ndata: {}\n\n")];
    answer = async () => replies.shift() ?? json(500, {});
    const got: number[] = [];
    const channel = new Channel<unknown[]>();
    channel.onmessage = (events) => got.push(...events.map((e) => (e as { seq: number }).seq));
    const request = { workflow: { switchyard: 1, name: "w", nodes: [], edges: [] }, workflowPath: null, input: null, answersPath: null, model: null, reuseRun: null, fromNode: null };
    expect(await commands.startRun(request as never, channel as never)).toEqual({ status: "ok", data: "r9" });
    await vi.waitFor(() => expect(got).toEqual([1]), { timeout: 5000 });
    expect(Object.keys(JSON.parse(String(sent[0].init.body)))).toEqual(["request"]);
    expect(sent[1].url).toBe("http://server/api/runs/r9/events?after=0");
  });

  test("a followed run's events arrive in order, and a dropped stream is taken up after the last event received", async () => {
    const streams = [sse(event(4) + event(5)), sse(event(6) + "event: end\ndata: {}\n\n")];
    answer = async () => streams.shift() ?? json(500, {});
    const got: number[][] = [];
    const channel = new Channel<unknown[]>();
    channel.onmessage = (events) => got.push(events.map((e) => (e as { seq: number }).seq));
    const r = await commands.followRun("r1", 3, channel as never);
    expect(r.status).toBe("ok");
    await vi.waitFor(() => expect(got.flat()).toEqual([4, 5, 6]), { timeout: 5000 });
    expect(sent.map((s) => s.url)).toEqual(["http://server/api/runs/r1/events?after=3", "http://server/api/runs/r1/events?after=5"]);
  });
});

describe("whether the server answers", () => {
  test("a command that cannot reach the server says so at once, and the watch says when it answers again", async () => {
    vi.useFakeTimers();
    const heard: boolean[] = [];
    const off = onReachability((r) => heard.push(r));
    answer = async () => {
      throw new TypeError("Failed to fetch");
    };
    const r = await commands.listRuns(null);
    expect(r).toMatchObject({ status: "error", error: { code: "SERVER_UNREACHABLE" } });
    expect(heard).toEqual([false]);
    const stop = watchServer("http://server", 5000);
    await vi.advanceTimersByTimeAsync(5000);
    expect(heard).toEqual([false]); // still away: nothing new is said
    answer = async () => new Response("ok", { status: 200 });
    await vi.advanceTimersByTimeAsync(2000);
    expect(heard).toEqual([false, true]);
    expect(sent.at(-1)?.url).toBe("http://server/healthz");
    answer = async () => new Response("", { status: 503 });
    await vi.advanceTimersByTimeAsync(5000);
    expect(heard).toEqual([false, true, false]);
    stop();
    off();
    answer = async () => json(200, []);
    await commands.listRuns(null);
    vi.useRealTimers();
  });
});
