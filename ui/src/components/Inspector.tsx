// Every field of the selected node or edge, edited live (each change is one undoable edit), and, after a run, what
// the node saw and produced, per iteration.
import { useEffect, useState } from "react";
import type { Condition, Edge, Node } from "../types";
import { edgeKey, useDocument } from "../store/document";
import { useNodeRun } from "../store/run";
import { useValidation } from "../store/validation";

function Field({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <label className="field">
      <span>{label}</span>
      {children}
    </label>
  );
}

/** A text input that commits on blur or Enter, so typing is one undo step, not one per key. */
function Text({ value, onCommit, multiline, placeholder, testId }: { value: string; onCommit: (v: string) => void; multiline?: boolean; placeholder?: string; testId?: string }) {
  const [draft, setDraft] = useState(value);
  useEffect(() => setDraft(value), [value]);
  const commit = () => draft !== value && onCommit(draft);
  return multiline ? (
    <textarea data-testid={testId} value={draft} placeholder={placeholder} rows={6} spellCheck={false} onChange={(e) => setDraft(e.target.value)} onBlur={commit} />
  ) : (
    <input data-testid={testId} value={draft} placeholder={placeholder} onChange={(e) => setDraft(e.target.value)} onBlur={commit} onKeyDown={(e) => e.key === "Enter" && commit()} />
  );
}

/** JSON edited as text; invalid JSON is shown, not committed. */
function Json({ value, onCommit, testId }: { value: unknown; onCommit: (v: unknown) => void; testId?: string }) {
  const shown = value === undefined || value === null ? "" : JSON.stringify(value, null, 2);
  const [draft, setDraft] = useState(shown);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => setDraft(shown), [shown]);
  const commit = () => {
    if (draft === shown) return;
    if (!draft.trim()) {
      setError(null);
      onCommit(null);
      return;
    }
    try {
      onCommit(JSON.parse(draft));
      setError(null);
    } catch (e) {
      setError(String(e));
    }
  };
  return (
    <>
      <textarea data-testid={testId} className="mono" rows={6} spellCheck={false} value={draft} onChange={(e) => setDraft(e.target.value)} onBlur={commit} />
      {error && <div className="field-error">{error}</div>}
    </>
  );
}

const orNone = (v: string) => (v.trim() === "" ? undefined : v);

function NodeFields({ node, models }: { node: Node; models: string[] }) {
  const update = useDocument((s) => s.updateNode);
  const set = (patch: Partial<Node>) => update(node.id, patch);
  const conditions: Condition[] = node.conditions ?? [];
  return (
    <>
      <Field label="id">
        <Text testId="inspector-id" value={node.id} onCommit={(v) => v.trim() && set({ id: v.trim() })} />
      </Field>
      <Field label="name">
        <Text value={node.name ?? ""} onCommit={(v) => set({ name: orNone(v) })} />
      </Field>
      <Field label="description">
        <Text value={node.description ?? ""} onCommit={(v) => set({ description: orNone(v) })} />
      </Field>
      {node.type === "start" && (
        <Field label="initial input (JSON or text)">
          <Json value={node.initial_input} onCommit={(v) => set({ initial_input: v as Node["initial_input"] })} />
        </Field>
      )}
      {node.type === "agent" && (
        <>
          <Field label="model">
            <input list="models" value={node.model ?? ""} placeholder="workflow default" onChange={(e) => set({ model: orNone(e.target.value) })} />
            <datalist id="models">{models.map((m) => <option key={m} value={m} />)}</datalist>
          </Field>
          <Field label="system prompt">
            <Text multiline value={node.system_prompt ?? ""} onCommit={(v) => set({ system_prompt: orNone(v) })} />
          </Field>
          <Field label="user prompt (Jinja; empty = previous output)">
            <Text testId="inspector-prompt" multiline value={node.user_prompt ?? ""} placeholder="{{ PREVIOUS_OUTPUT }}" onCommit={(v) => set({ user_prompt: orNone(v) })} />
          </Field>
          <Field label="reasoning effort">
            <select value={node.reasoning_effort ?? ""} onChange={(e) => set({ reasoning_effort: (orNone(e.target.value) as Node["reasoning_effort"]) })}>
              <option value="">default</option>
              {["minimal", "low", "medium", "high"].map((r) => <option key={r}>{r}</option>)}
            </select>
          </Field>
          <div className="checks">
            <label><input type="checkbox" checked={node.tools?.web_search ?? false} onChange={(e) => set({ tools: { web_search: e.target.checked, subagents: node.tools?.subagents ?? false } })} /> web search</label>
            <label><input type="checkbox" checked={node.tools?.subagents ?? false} onChange={(e) => set({ tools: { subagents: e.target.checked, web_search: node.tools?.web_search ?? false } })} /> subagents</label>
          </div>
          <Field label="output schema (JSON Schema)">
            <Json value={node.output_schema} onCommit={(v) => set({ output_schema: v as Node["output_schema"] })} />
          </Field>
        </>
      )}
      {node.type === "if" && (
        <div className="conditions">
          <span>conditions (first true wins; none → false)</span>
          {conditions.map((c, i) => (
            <div className="condition" key={i}>
              <select value={c.operator} onChange={(e) => set({ conditions: conditions.map((x, j) => (j === i ? { ...x, operator: e.target.value as Condition["operator"] } : x)) })}>
                <option>contains</option>
                <option>equal</option>
                <option>expression</option>
              </select>
              <Text value={c.value} onCommit={(v) => set({ conditions: conditions.map((x, j) => (j === i ? { ...x, value: v } : x)) })} />
              <button title="remove" onClick={() => set({ conditions: conditions.filter((_, j) => j !== i) })}>×</button>
            </div>
          ))}
          <button onClick={() => set({ conditions: [...conditions, { operator: "contains", value: "" }] })}>+ condition</button>
        </div>
      )}
      {node.type === "approval" && (
        <>
          <Field label="message">
            <Text multiline value={node.message ?? ""} onCommit={(v) => set({ message: orNone(v) })} />
          </Field>
          <Field label="timeout (seconds)">
            <input type="number" min={1} value={node.timeout_seconds ?? ""} onChange={(e) => set({ timeout_seconds: e.target.value ? Number(e.target.value) : undefined })} />
          </Field>
        </>
      )}
      {node.type === "script" && (
        <>
          <Field label="language">
            <Text value={node.language ?? ""} onCommit={(v) => set({ language: orNone(v) })} />
          </Field>
          <Field label="code (runs only from pinned output or a script file)">
            <Text multiline value={node.code ?? ""} onCommit={(v) => set({ code: orNone(v) })} />
          </Field>
        </>
      )}
      {(node.type === "agent" || node.type === "script") && (
        <>
          <Field label="for each (expression yielding a list)">
            <Text value={node.for_each?.items ?? ""} onCommit={(v) => set({ for_each: v.trim() ? { items: v, concurrency: node.for_each?.concurrency } : undefined })} />
          </Field>
          <Field label="retries of transient failures">
            <input type="number" min={0} value={node.retry?.max ?? ""} onChange={(e) => set({ retry: e.target.value ? { max: Number(e.target.value), backoff_ms: node.retry?.backoff_ms } : undefined })} />
          </Field>
        </>
      )}
      {node.type !== "start" && (
        <>
          <Field label="on error">
            <select value={node.on_error ?? "stop"} onChange={(e) => set({ on_error: e.target.value === "stop" ? undefined : (e.target.value as Node["on_error"]) })}>
              <option>stop</option>
              <option>continue</option>
            </select>
          </Field>
          <Field label="pinned output (JSON; replaces execution)">
            <Json value={node.pinned} onCommit={(v) => set({ pinned: v as Node["pinned"] })} />
          </Field>
        </>
      )}
    </>
  );
}

function EdgeFields({ edge }: { edge: Edge }) {
  const update = useDocument((s) => s.updateEdge);
  const key = edgeKey(edge);
  const set = (patch: Partial<Edge>) => update(key, patch);
  return (
    <>
      <div className="muted">{edge.from} → {edge.to} {edge.handle ? `(${edge.handle})` : ""}</div>
      <Field label="when (natural language; the model decides)">
        <Text testId="inspector-when" multiline value={edge.when ?? ""} onCommit={(v) => set({ when: orNone(v) })} />
      </Field>
      <Field label="if (expression guard)">
        <Text value={edge.if ?? ""} onCommit={(v) => set({ if: orNone(v) })} />
      </Field>
      <Field label="max iterations">
        <input type="number" min={1} value={edge.max_iterations ?? ""} onChange={(e) => set({ max_iterations: e.target.value ? Number(e.target.value) : undefined })} />
      </Field>
    </>
  );
}

function RunDetails({ id }: { id: string }) {
  const run = useNodeRun(id);
  const [pick, setPick] = useState<number | null>(null);
  if (!run || !run.iterations.length) return null;
  const it = run.iterations.find((i) => i.iteration === pick) ?? run.iterations[run.iterations.length - 1];
  return (
    <section className="run-details" data-testid="run-details">
      <h3>Run</h3>
      {run.iterations.length > 1 && (
        <select value={it.iteration} onChange={(e) => setPick(Number(e.target.value))}>
          {run.iterations.map((i) => <option key={i.iteration} value={i.iteration}>iteration {i.iteration}</option>)}
        </select>
      )}
      <div className="muted">{run.status}{it.durationMs != null ? ` · ${it.durationMs} ms` : ""}</div>
      {it.instruction && (<><h4>Input</h4><pre>{it.instruction}</pre></>)}
      {run.status === "running" && run.streamed && (<><h4>Streaming</h4><pre>{run.streamed}</pre></>)}
      {it.result && (<><h4>Output</h4><pre data-testid="run-output">{JSON.stringify(it.result.data, null, 2)}</pre></>)}
      {it.result?.error && (<><h4>Error</h4><pre className="field-error">{it.result.error}</pre></>)}
      {it.result && it.result.toolCalls.length > 0 && (
        <>
          <h4>Tool calls</h4>
          {it.result.toolCalls.map((c, i) => <pre key={i}>{c.tool}({JSON.stringify(c.input)}) → {c.error ? `error: ${c.error}` : JSON.stringify(c.output)}</pre>)}
        </>
      )}
    </section>
  );
}

export function Inspector({ models }: { models: string[] }) {
  const workflow = useDocument((s) => s.workflow);
  const selection = useDocument((s) => s.selection);
  const findings = useValidation((s) => (selection.nodes[0] ? s.byNode[selection.nodes[0]] : undefined));
  const node = selection.nodes.length === 1 ? workflow.nodes.find((n) => n.id === selection.nodes[0]) : undefined;
  const edge = !node && selection.edges.length === 1 ? workflow.edges.find((e) => edgeKey(e) === selection.edges[0]) : undefined;
  const rename = useDocument((s) => s.edit);
  if (!node && !edge) {
    return (
      <aside className="inspector">
        <h2>Workflow</h2>
        <Field label="name">
          <Text value={workflow.name} onCommit={(v) => rename((w) => ({ ...w, name: v }))} />
        </Field>
        <Field label="default model">
          <input list="models" value={workflow.defaults?.model ?? ""} onChange={(e) => rename((w) => ({ ...w, defaults: { ...(w.defaults ?? {}), model: orNone(e.target.value) } }))} />
          <datalist id="models">{models.map((m) => <option key={m} value={m} />)}</datalist>
        </Field>
        <p className="muted">Select a node or an edge to edit it.</p>
      </aside>
    );
  }
  return (
    <aside className="inspector" data-testid="inspector">
      <h2>{node ? `${node.type} node` : "edge"}</h2>
      {findings && node && (
        <ul className="findings-inline">{findings.map((f, i) => <li key={i} className={f.level}>{f.message}</li>)}</ul>
      )}
      {node ? <NodeFields key={node.id} node={node} models={models} /> : <EdgeFields key={edgeKey(edge!)} edge={edge!} />}
      {node && <RunDetails id={node.id} />}
    </aside>
  );
}
