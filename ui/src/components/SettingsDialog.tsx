// Settings: model providers, the default model and call limits. Saved through the engine, which validates them;
// keys are never entered here, only the name of the environment variable that holds each.
import { useState } from "react";
import type { Settings } from "../types";
import { commands, unwrap } from "../api";

type Provider = Settings["providers"][number];

const blank = (): Provider => ({ id: "", kind: "openai", base_url: "", api_key_env: "", default_model: "" }) as Provider;

export function SettingsDialog({ initial, onClose, onSaved }: { initial: Settings; onClose: () => void; onSaved: (s: Settings) => void }) {
  const [providers, setProviders] = useState<Provider[]>(initial.providers ?? []);
  const [defaultModel, setDefaultModel] = useState(initial.default_model ?? "");
  const [limits, setLimits] = useState(initial.limits);
  const [error, setError] = useState<string | null>(null);
  const update = (i: number, patch: Partial<Provider>) => setProviders((ps) => ps.map((p, j) => (j === i ? { ...p, ...patch } : p)));
  const clean = (v: string | undefined) => (v && v.trim() ? v.trim() : undefined);

  const save = async () => {
    const settings: Settings = {
      providers: providers
        .filter((p) => p.id.trim())
        .map((p) => ({ ...p, id: p.id.trim(), base_url: clean(p.base_url), api_key_env: clean(p.api_key_env), default_model: clean(p.default_model) })),
      default_model: clean(defaultModel),
      limits,
    };
    try {
      await unwrap(commands.saveSettings(settings));
      onSaved(settings);
      onClose();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };

  return (
    <div className="modal-backdrop" role="dialog" aria-modal="true" data-testid="settings">
      <div className="modal wide">
        <h2>Settings</h2>
        <h4>Model providers</h4>
        <p className="muted small">With none configured, <code>local</code> finds an OpenAI-compatible server on this machine (Ollama, llama.cpp).</p>
        <table className="providers">
          <thead>
            <tr><th>id</th><th>kind</th><th>base URL</th><th>key variable</th><th>default model</th><th /></tr>
          </thead>
          <tbody>
            {providers.map((p, i) => (
              <tr key={i}>
                <td><input value={p.id} placeholder="openai" onChange={(e) => update(i, { id: e.target.value })} /></td>
                <td>
                  <select value={p.kind} onChange={(e) => update(i, { kind: e.target.value as Provider["kind"] })}>
                    <option value="openai">OpenAI-compatible</option>
                    <option value="anthropic">Anthropic</option>
                  </select>
                </td>
                <td><input value={p.base_url ?? ""} placeholder="default" onChange={(e) => update(i, { base_url: e.target.value })} /></td>
                <td><input value={p.api_key_env ?? ""} placeholder="OPENAI_API_KEY" onChange={(e) => update(i, { api_key_env: e.target.value })} /></td>
                <td><input value={p.default_model ?? ""} onChange={(e) => update(i, { default_model: e.target.value })} /></td>
                <td><button title="remove" onClick={() => setProviders((ps) => ps.filter((_, j) => j !== i))}>×</button></td>
              </tr>
            ))}
          </tbody>
        </table>
        <button onClick={() => setProviders((ps) => [...ps, blank()])}>+ provider</button>
        <label className="field">
          <span>default model (provider/model)</span>
          <input value={defaultModel} placeholder="local/smollm2-135m" onChange={(e) => setDefaultModel(e.target.value)} />
        </label>
        <h4>Limits per model call</h4>
        <div className="limits">
          <label className="field"><span>timeout (ms)</span><input type="number" min={1} value={limits.timeout_ms} onChange={(e) => setLimits({ ...limits, timeout_ms: Number(e.target.value) })} /></label>
          <label className="field"><span>retries</span><input type="number" min={0} value={limits.retries} onChange={(e) => setLimits({ ...limits, retries: Number(e.target.value) })} /></label>
          <label className="field"><span>tool turns</span><input type="number" min={1} value={limits.max_tool_turns} onChange={(e) => setLimits({ ...limits, max_tool_turns: Number(e.target.value) })} /></label>
        </div>
        {error && <div className="field-error">{error}</div>}
        <div className="actions">
          <button onClick={onClose}>Cancel</button>
          <button className="primary" onClick={save}>Save</button>
        </div>
      </div>
    </div>
  );
}
