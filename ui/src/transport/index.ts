// How the generated client (`bindings.ts`) reaches a shell. In the desktop app: Tauri's IPC. In a browser, against
// `switchyard serve`: the server's HTTP API — `POST /api/commands/NAME` for each command, a run's events as
// Server-Sent Events for each channel. The generated commands call Tauri's `invoke`, which calls
// `window.__TAURI_INTERNALS__`; in a browser `installServerTransport` puts the HTTP transport there before the app
// starts (the seam Tauri's own mocks use), so every store calls the same commands in both places.
//
// Invariants: nothing else in the UI knows which transport it has, except through `onServer` and `appWindow` (what only
// the desktop app can do: its window, its files, resuming runs itself); the token never reaches a URL, a log or the server's
// storage (it is kept in this browser's local storage and sent as a bearer header).
import { createParser } from "eventsource-parser";
// What the transport knows of each command, generated from the list of commands (`crates/api/src/list.rs`).
import commandTable from "../generated/commands.json";

/** A command as the list describes it: its arguments as sent, its channel, what it needs of a host, and what a
 * browser does itself (keeps its value, follows a run). */
type CommandInfo = { args: string[]; channel: string | null; needs: string; keptBy?: string; default?: unknown; follows?: boolean };
const table = commandTable as Record<string, CommandInfo>;

let server = false;
/** The app reaches a server over HTTP: it is in a browser, served by `switchyard serve`. */
export const onServer = (): boolean => server;
/** The desktop app's window is there, to title and to close (not in a browser, nor in unit tests). */
export const appWindow = (): boolean => !server && "__TAURI_INTERNALS__" in window;

const TOKEN_KEY = "switchyard.token";

/** Why the server refused this browser: no token, or one it does not know. The sign-in form listens. */
type SignInListener = (why: string) => void;
const signInListeners = new Set<SignInListener>();
export function onSignInNeeded(listener: SignInListener): () => void {
  signInListeners.add(listener);
  return () => signInListeners.delete(listener);
}

export function storedToken(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

/** Keeps a token for this browser (a link's `#token=…` is taken once and removed from the address bar). */
export function keepToken(token: string | null): void {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

/**
 * Signs this browser out of the server: the kept token is forgotten and the page starts again, so what it showed is
 * gone and the sign-in form asks for a token (the token itself stays valid on the server until it is revoked).
 */
export function signOut(): void {
  keepToken(null);
  location.reload();
}

export function tokenFromAddress(): void {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!m) return;
  keepToken(decodeURIComponent(m[1]));
  history.replaceState(null, "", location.pathname + location.search);
}

/** The names of the workflows the server at this page's origin serves (`GET /api/workflows`); empty when it cannot say. */
export async function servedWorkflows(base = ""): Promise<string[]> {
  try {
    const token = storedToken();
    const response = await fetch(`${base}/api/workflows`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    if (!response.ok) return [];
    const body = (await response.json()) as { workflows?: { name: string }[] };
    return (body.workflows ?? []).map((w) => w.name);
  } catch {
    return [];
  }
}

type Failure = { code: string; message: string };

/** Whether the server answers: said when it stops answering and when it answers again. */
type ReachListener = (reachable: boolean) => void;
const reachListeners = new Set<ReachListener>();
let reachable = true;
function setReachable(now: boolean): void {
  if (now === reachable) return;
  reachable = now;
  reachListeners.forEach((l) => l(now));
}
export function onReachability(listener: ReachListener): () => void {
  reachListeners.add(listener);
  return () => reachListeners.delete(listener);
}

/** Asks the server's `/healthz` (no token) every `ms`, so the page says the server is gone before anyone clicks,
 * and says when it is back. A command that cannot reach it says so at once too. Returns how to stop watching. */
export function watchServer(base = "", ms = 5000): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const probe = async () => {
    try {
      const response = await fetch(`${base}/healthz`, { cache: "no-store" });
      if (!stopped) setReachable(response.ok);
    } catch {
      if (!stopped) setReachable(false);
    }
    // Quicker while it is away, so the page says it is back soon after it is.
    if (!stopped) timer = setTimeout(() => void probe(), reachable ? ms : Math.min(ms, 2000));
  };
  timer = setTimeout(() => void probe(), ms);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** The page a command comes from, as the server reads it: the workflow its address names (`?workflow=NAME`, which
 * `startup_file` opens). */
function page(): string {
  const workflow = new URLSearchParams(location.search).get("workflow");
  return workflow ? `?workflow=${encodeURIComponent(workflow)}` : "";
}
type Callback = (payload: unknown) => void;

/** The server at `base` (this page's origin when served by `switchyard serve`). */
export function installServerTransport(base = ""): void {
  server = true;
  const callbacks = new Map<number, Callback>();
  let nextId = 1;
  const transport = new ServerTransport(base, callbacks);
  (window as unknown as { __TAURI_INTERNALS__: unknown }).__TAURI_INTERNALS__ = {
    transformCallback: (callback: Callback, once = false) => {
      const id = nextId++;
      callbacks.set(id, once ? (p) => (callbacks.delete(id), callback(p)) : callback);
      return id;
    },
    unregisterCallback: (id: number) => callbacks.delete(id),
    invoke: (cmd: string, args: Record<string, unknown> = {}) => transport.invoke(cmd, args),
    metadata: { currentWindow: { label: "main" }, currentWebview: { windowLabel: "main", label: "main" } },
  };
}

/** A channel as the generated client passes it: Tauri's `Channel`, delivered to through its callback id. */
type ChannelLike = { id: number; toJSON: () => string };
const isChannel = (v: unknown): v is ChannelLike => typeof v === "object" && v !== null && "id" in v && typeof (v as { toJSON?: unknown }).toJSON === "function" && String((v as ChannelLike).toJSON()).startsWith("__CHANNEL__");

class ServerTransport {
  /** The run followed now; following another stops it (as the desktop app follows one run at a time). */
  private following: AbortController | null = null;

  constructor(
    private base: string,
    private callbacks: Map<number, Callback>,
  ) {}

  async invoke(cmd: string, args: Record<string, unknown>): Promise<unknown> {
    switch (cmd) {
      // Tauri's dialog plugin, which is not one of our commands.
      case "plugin:dialog|message":
        // `ask`: the browser's own confirmation.
        return window.confirm(String(args.message)) ? "Yes" : "No";
      case "plugin:dialog|open":
        throw { code: "NOT_ON_SERVER", message: "In a browser, the canvas opens the server's workflows: add ?workflow=NAME to the address, or open a run from History." } satisfies Failure;
      case "plugin:dialog|save":
        throw { code: "NOT_ON_SERVER", message: "Saving is not available in a browser: the server's workflows are files in its folder; edit them there." } satisfies Failure;
    }
    const info = table[cmd];
    // What this browser keeps itself (the desktop app keeps it in its data folder): one command's argument, given
    // back by the command that it keeps over that command's default value.
    const kept = Object.values(table).find((c) => c.keptBy === cmd);
    if (kept) {
      const [arg] = info.args;
      localStorage.setItem(`switchyard.${arg}`, JSON.stringify(args[arg]));
      return null;
    }
    if (info?.keptBy) {
      const [arg] = table[info.keptBy].args;
      return { ...(info.default as object), ...JSON.parse(localStorage.getItem(`switchyard.${arg}`) ?? "{}") };
    }
    const channel = info?.channel ? (args[info.channel] as ChannelLike | undefined) : undefined;
    // A run this browser follows itself, from the run's event stream.
    if (info?.follows && channel) {
      this.follow(String(args[info.args[0]]), Number(args[info.args[1]] ?? 0), channel);
      return null;
    }
    const plain = Object.fromEntries(Object.entries(args).filter(([, v]) => !isChannel(v)));
    const value = await this.call(cmd, plain);
    // A started run's events come as the run's event stream, from its first.
    if (channel) this.follow(String(value), 0, channel);
    return value;
  }

  private headers(): Record<string, string> {
    const token = storedToken();
    return { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) };
  }

  /** One command: its value, or its `{code, message}` thrown (the generated client turns it into an error result). */
  private async call(cmd: string, args: Record<string, unknown>): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${this.base}/api/commands/${cmd}${page()}`, { method: "POST", headers: this.headers(), body: JSON.stringify(args) });
    } catch (e) {
      setReachable(false);
      throw { code: "SERVER_UNREACHABLE", message: `The server does not answer (${String(e)}): is switchyard serve running?` } satisfies Failure;
    }
    setReachable(true);
    const body: unknown = await response.json().catch(() => null);
    if (response.ok) return body;
    const failure = (body as Failure | null) ?? { code: "SERVER_ERROR", message: `The server answered ${response.status}` };
    if (response.status === 401) signInListeners.forEach((l) => l(failure.message));
    throw failure;
  }

  /** Sends a run's events numbered after `after` to `channel` as the server writes them, reconnecting from the last
   * one received (the server restarted, the network dropped) until the run ends or another run is followed. */
  private follow(runId: string, after: number, channel: ChannelLike): void {
    this.following?.abort();
    const abort = new AbortController();
    this.following = abort;
    let index = 0;
    let last = after;
    const deliver = (events: unknown[]) => {
      if (!abort.signal.aborted) this.callbacks.get(channel.id)?.({ index: index++, message: events });
    };
    void (async () => {
      let ended = false;
      let wait = 1000;
      while (!ended && !abort.signal.aborted) {
        try {
          const response = await fetch(`${this.base}/api/runs/${encodeURIComponent(runId)}/events?after=${last}`, { headers: this.headers(), signal: abort.signal });
          if (response.status === 401) {
            const failure = (await response.json().catch(() => null)) as Failure | null;
            signInListeners.forEach((l) => l(failure?.message ?? "The server does not know this token"));
            return;
          }
          // A refusal is final (no such run, a bad request); a server that is away or restarting is asked again.
          if (response.status < 500 && !response.ok) return;
          if (!response.ok || !response.body) throw new Error(String(response.status));
          wait = 1000;
          const batch: unknown[] = [];
          const parser = createParser({
            onEvent: (e) => {
              if (e.event === "end") ended = true;
              else if (e.id) {
                last = Number(e.id);
                batch.push(JSON.parse(e.data));
              }
            },
          });
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            parser.feed(value);
            // What one read brought is one batch: the run view applies it in one frame.
            if (batch.length) deliver(batch.splice(0));
          }
        } catch {
          if (abort.signal.aborted) return;
        }
        if (!ended) await new Promise((r) => setTimeout(r, wait));
        wait = Math.min(wait * 2, 10000);
      }
    })();
  }
}
