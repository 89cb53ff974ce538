// Settings: model providers, the default model, call limits and MCP servers. The engine checks them when they are saved and
// refuses what it could not read back (duplicate ids, malformed URLs or variable names), with the reason shown on
// the field. Keys are never entered here, only the name of the environment variable that holds each.
import { useState } from "react";
import * as Dialog from "@radix-ui/react-dialog";
import type { Settings } from "../types";
import type { McpServerConfig_Deserialize as McpServerConfig } from "../bindings";
import { commands } from "../api";
import { errorText } from "../store/messages";
import { usePrefs, type CommandError, type SettingsProblem } from "../store/prefs";
import * as storedRuns from "../store/history";

type Provider = Settings["providers"][number];

const blank = (): Provider => ({ id: "", kind: "openai", base_url: "", api_key_env: "", default_model: "" }) as Provider;

export function SettingsDialog({ onClose }: { onClose: () => void }) {
  const initial = usePrefs((s) => s.settings)!;
  const loadProblem = usePrefs((s) => s.settingsProblem);
  const [providers, setProviders] = useState<Provider[]>(initial.providers ?? []);
  const [defaultModel, setDefaultModel] = useState(initial.default_model ?? "");
  const [limits, setLimits] = useState(initial.limits);
  const [serverUrl, setServerUrl] = useState(initial.server?.url ?? "");
  const [tokenEnv, setTokenEnv] = useState(initial.server?.token_env ?? "SWITCHYARD_TOKEN");
  const [problems, setProblems] = useState<SettingsProblem[]>([]);
  const [yourName, setYourName] = useState(() => usePrefs.getState().yourName);
  const [nameProblem, setNameProblem] = useState<string | null>(null);
  // MCP servers as the widely used `mcpServers` JSON, so a list from another tool can be pasted.
  const [mcpText, setMcpText] = useState(() => JSON.stringify(initial.mcp_servers ?? {}, null, 2));
  const [mcpTested, setMcpTested] = useState<{ name: string; ok: boolean; text: string }[] | null>(null);
  const parseMcp = (): Record<string, McpServerConfig> => {
    const parsed = JSON.parse(mcpText.trim() || "{}");
    const servers = parsed && typeof parsed === "object" && "mcpServers" in parsed ? parsed.mcpServers : parsed;
    if (!servers || typeof servers !== "object" || Array.isArray(servers)) throw new Error("write an object: {\"name\": {\"command\": …} or {\"url\": …}}");
    return servers as Record<string, McpServerConfig>;
  };
  const testMcp = async () => {
    let servers: Record<string, McpServerConfig>;
    try {
      servers = parseMcp();
    } catch (e) {
      setMcpTested([{ name: "MCP servers", ok: false, text: `not valid JSON: ${errorText(e)}` }]);
      return;
    }
    setMcpTested(Object.keys(servers).map((name) => ({ name, ok: true, text: "starting…" })));
    const results = await Promise.all(
      Object.entries(servers).map(async ([name, server]) => {
        const r = await commands.probeMcp(name, server).catch((e) => ({ status: "error" as const, error: { code: "MCP_UNAVAILABLE", message: errorText(e), problems: null } }));
        return r.status === "ok"
          ? { name, ok: true, text: r.data.length ? r.data.map((t) => `${name}__${t.name}`).join(", ") : "no tools" }
          : { name, ok: false, text: (r.error as CommandError).message };
      }),
    );
    setMcpTested(results);
  };
  const [error, setError] = useState<string | null>(null);
  const update = (i: number, patch: Partial<Provider>) => setProviders((ps) => ps.map((p, j) => (j === i ? { ...p, ...patch } : p)));
  const clean = (v: string | undefined | null) => (v && v.trim() ? v.trim() : undefined);
  const problemAt = (field: string) => problems.find((p) => p.field === field)?.message;
  const cell = (field: string) => ({ className: problemAt(field) ? "invalid" : undefined, "aria-invalid": Boolean(problemAt(field)), title: problemAt(field) });

  const save = async () => {
    let mcp_servers: Record<string, McpServerConfig>;
    try {
      mcp_servers = parseMcp();
    } catch (e) {
      setError(`MCP servers: not valid JSON (${errorText(e)})`);
      return;
    }
    const settings = {
      // What this dialog does not edit (prices) is kept as it was.
      ...initial,
      server: serverUrl.trim() ? { url: serverUrl.trim(), token_env: tokenEnv.trim() } : undefined,
      mcp_servers,
      providers: providers.map((p) => ({ ...p, id: p.id.trim(), base_url: clean(p.base_url), api_key_env: clean(p.api_key_env), default_model: clean(p.default_model) })),
      default_model: clean(defaultModel),
      limits,
    } as Settings;
    // Your name is kept with the window's preferences, before the settings file: a name refused saves nothing.
    const refused = yourName !== usePrefs.getState().yourName ? await usePrefs.getState().setYourName(yourName) : null;
    setNameProblem(refused?.message ?? null);
    if (refused) {
      setError(`Not saved: ${refused.message}`);
      return;
    }
    try {
      const r = await commands.saveSettings(settings);
      if (r.status === "error") {
        const e = r.error as CommandError;
        setProblems(e.problems ?? []);
        setError(e.problems?.length ? `Not saved: ${e.problems.length} problem${e.problems.length > 1 ? "s" : ""} to fix (marked in red).` : e.message);
        return;
      }
      usePrefs.getState().setSettings(settings);
      void storedRuns.refresh(); // a server named or changed: its runs
      onClose();
    } catch (e) {
      setError(errorText(e));
    }
  };

  const found = usePrefs((s) => s.defaultModel);
  const limitWarnings = implausibleLimits(limits);
  const unplaced = problems.filter((p) => !/^providers\[\d+\]\.|^default_model$|^server\./.test(p.field));
  return (
    // Radix Dialog: Escape or a click outside closes it without saving; focus stays inside while it is open.
    <Dialog.Root open onOpenChange={(open) => !open && onClose()}>
      <Dialog.Portal>
      <Dialog.Overlay className="dialog-overlay" />
      <Dialog.Content className="dialog wide" data-testid="settings" aria-describedby={undefined}>
        <Dialog.Title className="dialog-title">Settings</Dialog.Title>
        {loadProblem && (
          <div className="banner error" data-testid="settings-load-problem">
            The settings file could not be read: {loadProblem.message}. Showing defaults; saving replaces the file.
          </div>
        )}
        <h4>Model providers</h4>
        <p className="muted small">With none configured, <code>local</code> finds an OpenAI-compatible server on this machine (Ollama, llama.cpp).</p>
        <table className="providers">
          <thead>
            <tr><th>id</th><th>kind</th><th>base URL</th><th>key variable</th><th>default model</th><th /></tr>
          </thead>
          <tbody>
            {providers.length === 0 && (
              <tr>
                <td colSpan={6} className="muted" data-testid="no-providers">
                  None yet. Agents run on the model server found on this computer; add a provider to use OpenAI, Anthropic or another server.
                </td>
              </tr>
            )}
            {providers.map((p, i) => (
              <tr key={i}>
                <td>
                  <input value={p.id} placeholder="openai" onChange={(e) => update(i, { id: e.target.value })} data-testid={`provider-${i}-id`} {...cell(`providers[${i}].id`)} />
                  {problemAt(`providers[${i}].id`) && <div className="field-error" data-testid={`problem-providers[${i}].id`}>{problemAt(`providers[${i}].id`)}</div>}
                </td>
                <td>
                  <select value={p.kind} onChange={(e) => update(i, { kind: e.target.value as Provider["kind"] })} aria-label="kind">
                    <option value="openai">OpenAI-compatible</option>
                    <option value="anthropic">Anthropic</option>
                  </select>
                </td>
                <td>
                  <input value={p.base_url ?? ""} placeholder="default" onChange={(e) => update(i, { base_url: e.target.value })} data-testid={`provider-${i}-base_url`} {...cell(`providers[${i}].base_url`)} />
                  {problemAt(`providers[${i}].base_url`) && <div className="field-error" data-testid={`problem-providers[${i}].base_url`}>{problemAt(`providers[${i}].base_url`)}</div>}
                </td>
                <td>
                  <input value={p.api_key_env ?? ""} placeholder="OPENAI_API_KEY" onChange={(e) => update(i, { api_key_env: e.target.value })} data-testid={`provider-${i}-api_key_env`} {...cell(`providers[${i}].api_key_env`)} />
                  {problemAt(`providers[${i}].api_key_env`) && <div className="field-error" data-testid={`problem-providers[${i}].api_key_env`}>{problemAt(`providers[${i}].api_key_env`)}</div>}
                </td>
                <td>
                  <input value={p.default_model ?? ""} onChange={(e) => update(i, { default_model: e.target.value })} {...cell(`providers[${i}].default_model`)} />
                  {problemAt(`providers[${i}].default_model`) && <div className="field-error">{problemAt(`providers[${i}].default_model`)}</div>}
                </td>
                <td><button title="remove" onClick={() => setProviders((ps) => ps.filter((_, j) => j !== i))}>×</button></td>
              </tr>
            ))}
          </tbody>
        </table>
        <button onClick={() => setProviders((ps) => [...ps, blank()])} data-testid="add-provider">+ provider</button>
        <label className="field">
          <span>default model (provider/model)</span>
          <input value={defaultModel} placeholder="provider/model" onChange={(e) => setDefaultModel(e.target.value)} {...cell("default_model")} data-testid="settings-default-model" />
          {problemAt("default_model") && <div className="field-error">{problemAt("default_model")}</div>}
          <small className="muted" data-testid="settings-model-found">
            {defaultModel.trim()
              ? `Agents without a model of their own use ${defaultModel.trim()}.`
              : found?.model && found.source === "local"
                ? `Empty: agents without a model use ${found.model}, found on this computer.`
                : "Empty, and no model server answers on this computer: add a provider above, or start Ollama or llama.cpp's server."}
          </small>
        </label>
        <h4>Limits per model call</h4>
        <div className="limits">
          <label className="field"><span>timeout (ms)</span><input type="number" min={1} value={limits.timeout_ms} onChange={(e) => setLimits({ ...limits, timeout_ms: Number(e.target.value) })} /></label>
          <label className="field"><span>retries</span><input type="number" min={0} value={limits.retries} onChange={(e) => setLimits({ ...limits, retries: Number(e.target.value) })} /></label>
          <label className="field"><span>tool turns</span><input type="number" min={1} value={limits.max_tool_turns} onChange={(e) => setLimits({ ...limits, max_tool_turns: Number(e.target.value) })} /></label>
        </div>
        {limitWarnings.map((w) => <div key={w} className="field-warning" data-testid="limit-warning">{w}</div>)}
        <h4>MCP servers</h4>
        <p className="mcp-hint">
          Tools for agents (an agent's <code>tools.mcp</code> lists servers or <code>server/tool</code>). Paste an <code>mcpServers</code> object:{" "}
          <code>{'{"files": {"command": "npx", "args": ["-y", "…"]}, "remote": {"url": "http://127.0.0.1:8000/mcp"}}'}</code>. Secrets go in environment variables, written <code>{"${NAME}"}</code>.
        </p>
        <textarea className="mcp-servers" rows={6} value={mcpText} onChange={(e) => setMcpText(e.target.value)} spellCheck={false} data-testid="mcp-servers" />
        <button onClick={() => void testMcp()} data-testid="mcp-test">Test servers</button>
        {mcpTested && (
          <ul className="mcp-tested" data-testid="mcp-test-results">
            {mcpTested.map((r) => (
              <li key={r.name} className={r.ok ? "ok" : "field-error"}>
                {r.ok ? "✓" : "✗"} {r.name}: {r.text}
              </li>
            ))}
          </ul>
        )}
        <h4>You</h4>
        <label className="field">
          <span>Your name</span>
          <input value={yourName} placeholder="your name" onChange={(e) => setYourName(e.target.value)} data-testid="settings-your-name" className={nameProblem ? "invalid" : undefined} aria-invalid={Boolean(nameProblem)} />
          {nameProblem && <div className="field-error" data-testid="problem-your-name">{nameProblem}</div>}
          <small className="muted">The approvals you decide and the runs you cancel here name you in History (&quot;approved by {yourName.trim() || "…"}, 10:42&quot;), as a server names the person its token is for. Filled with this computer&apos;s user name until you change it.</small>
        </label>
        <h4>Server</h4>
        <p className="muted small">
          A Switchyard server (<code>switchyard serve</code>) whose runs History lists beside this computer&apos;s: open one to follow it live and to approve or reject its steps. The token is read from an environment variable, as keys are (make one on the server with <code>switchyard token create NAME</code>).
        </p>
        <div className="limits">
          <label className="field">
            <span>address</span>
            <input value={serverUrl} placeholder="http://127.0.0.1:8080" onChange={(e) => setServerUrl(e.target.value)} data-testid="settings-server-url" {...cell("server.url")} />
            {problemAt("server.url") && <div className="field-error" data-testid="problem-server.url">{problemAt("server.url")}</div>}
          </label>
          <label className="field">
            <span>token variable</span>
            <input value={tokenEnv} placeholder="SWITCHYARD_TOKEN" onChange={(e) => setTokenEnv(e.target.value)} data-testid="settings-server-token-env" {...cell("server.token_env")} />
            {problemAt("server.token_env") && <div className="field-error" data-testid="problem-server.token_env">{problemAt("server.token_env")}</div>}
          </label>
        </div>
        {unplaced.map((p) => <div key={p.field} className="field-error">{p.field}: {p.message}</div>)}
        {error && <div className="field-error" data-testid="settings-error">{error}</div>}
        <div className="actions">
          <button onClick={onClose}>Cancel</button>
          <button className="primary" onClick={save} data-testid="settings-save">Save</button>
        </div>
      </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

/** Limits that are allowed but almost certainly not meant: each with what it would do. */
export function implausibleLimits(limits: { timeout_ms: number; retries: number; max_tool_turns: number }): string[] {
  const out: string[] = [];
  if (limits.timeout_ms > 0 && limits.timeout_ms < 1000) out.push(`A timeout of ${limits.timeout_ms} ms ends almost every model call before it answers: most take seconds.`);
  if (limits.timeout_ms > 30 * 60 * 1000) out.push(`A timeout of ${Math.round(limits.timeout_ms / 60000)} minutes lets a stuck call hold its step that long.`);
  if (limits.retries > 10) out.push(`${limits.retries} retries can keep a failing call going for a very long time; 2 or 3 is usual.`);
  if (limits.max_tool_turns > 100) out.push(`${limits.max_tool_turns} tool turns lets one agent call tools that many times in a row.`);
  return out;
}
