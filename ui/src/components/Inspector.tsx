// The selected node's or edge's fields, edited live (what is typed goes into the document at once, and a field typed in
// is one undoable edit), and a node's last run: what it saw, what it produced, its tool calls and timing, per
// iteration. A node's fields come from the engine's definition of its type, so every field the engine knows is
// editable here and nothing else.
import { useEffect, useRef, useState } from "react";
import * as Tabs from "@radix-ui/react-tabs";
import { CornerRightDown, Pin, PinOff, X } from "lucide-react";
import type { Condition, Edge, Node } from "../types";
import { asksModel, nodeTypeSpec, type FieldSpec } from "../model/nodeTypes";
import { edgeKey, edgeKeys, holdDraft, nodeIds, nodeName, useDocument } from "../store/document";
import { useNodeRun } from "../store/run";
import { usePrefs } from "../store/prefs";
import { useValidation } from "../store/validation";
import { commands } from "../api";
import { errorText } from "../store/messages";
import { useLayoutPrefs, type InspectorTab } from "../store/layoutPrefs";
import { handleName } from "../model/labels";
import { NodeIcon } from "./NodeIcon";
import { Conversation } from "./Conversation";
import { ResultFork } from "./Fork";
import { inAppWords } from "../model/words";
import { useRunControl } from "../store/runControl";
import { TOKENS_UNREPORTED, tokensUnreported } from "../model/usage";
import * as files from "../store/files";
import { onServer } from "../transport";

function Field({ label, help, children }: { label: string; help?: string | null; children: React.ReactNode }) {
  return (
    <label className="field">
      <span>{label}</span>
      {children}
      {help && <small className="muted">{help}</small>}
    </label>
  );
}

/**
 * A field's text while it is typed in. Every keystroke goes into the document at once (`commit`; the edits typed in
 * one field, one after another, are one undo step), so what the person sees is what Save, Run and every other gesture
 * get, whatever they do next. The field shows the text as typed, not the document's reading of it (trimmed, parsed),
 * until the person leaves it; a change made elsewhere (undo, another file) shows at once unless they are typing here.
 */
function useTyped<E extends HTMLInputElement | HTMLTextAreaElement>(shown: string, commit: (text: string) => void) {
  const ref = useRef<E>(null);
  const [draft, setDraft] = useState(shown);
  useEffect(() => {
    if (document.activeElement !== ref.current) setDraft(shown);
  }, [shown]);
  const endTyping = () => useDocument.getState().endTyping();
  return {
    ref,
    value: draft,
    onChange: (e: React.ChangeEvent<E>) => {
      setDraft(e.target.value);
      commit(e.target.value);
    },
    onFocus: endTyping,
    onBlur: () => {
      endTyping();
      setDraft(shown);
    },
  };
}

/** A text field whose every keystroke goes into the document. */
function Text({ value, onCommit, multiline, placeholder, testId, mono, list }: { value: string; onCommit: (v: string) => void; multiline?: boolean; placeholder?: string; testId?: string; mono?: boolean; list?: string }) {
  const typed = useTyped<HTMLInputElement & HTMLTextAreaElement>(value, onCommit);
  return multiline ? (
    <textarea data-testid={testId} className={mono ? "mono" : undefined} placeholder={placeholder} rows={5} spellCheck={false} {...typed} />
  ) : (
    <input data-testid={testId} list={list} placeholder={placeholder} {...typed} />
  );
}

/**
 * An id: it goes into the document when finished (Enter, leaving the field), never half typed, since every reference
 * to the old id is rewritten and a half-typed id may be another node's. Until then the draft is held, and any other
 * change of the document or the selection (a click in the palette, on another node) commits it first.
 */
function IdText({ value, onCommit, testId, placeholder }: { value: string; onCommit: (v: string) => void; testId?: string; placeholder?: string }) {
  const [draft, setDraft] = useState(value);
  useEffect(() => setDraft(value), [value]);
  const latest = useRef({ draft, value, onCommit });
  latest.current = { draft, value, onCommit };
  const commit = () => {
    holdDraft(null);
    const { draft, value, onCommit } = latest.current;
    if (draft !== value) onCommit(draft);
  };
  // Taken away (its node deleted, another document loaded): the draft goes with it.
  useEffect(() => () => holdDraft(null), []);
  return (
    <input
      data-testid={testId}
      value={draft}
      placeholder={placeholder}
      onChange={(e) => {
        setDraft(e.target.value);
        holdDraft(commit);
      }}
      onBlur={commit}
      onKeyDown={(e) => e.key === "Enter" && commit()}
    />
  );
}

/** A number, into the document as it is typed; empty clears the field. */
function NumberInput({ value, onCommit, testId, min }: { value: number | undefined; onCommit: (v: number | undefined) => void; testId?: string; min?: number }) {
  const typed = useTyped<HTMLInputElement>(value == null ? "" : String(value), (text) => {
    const n = Number(text);
    if (text.trim() === "") onCommit(undefined);
    else if (Number.isFinite(n)) onCommit(n);
  });
  // A number input reads "" while what is typed is not a number yet ("1e"): that clears nothing.
  const onChange = (e: React.ChangeEvent<HTMLInputElement>) => !e.target.validity.badInput && typed.onChange(e);
  return <input type="number" min={min} data-testid={testId} {...typed} onChange={onChange} />;
}

/** JSON edited as text, into the document whenever it parses; invalid JSON is shown when the field is left. */
function Json({ value, onCommit, testId }: { value: unknown; onCommit: (v: unknown) => void; testId?: string }) {
  const shown = value === undefined || value === null ? "" : JSON.stringify(value, null, 2);
  const [error, setError] = useState<string | null>(null);
  const parse = (text: string): { ok: true; value: unknown } | { ok: false; error: string } => {
    if (!text.trim()) return { ok: true, value: undefined };
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch (e) {
      return { ok: false, error: String(e) };
    }
  };
  const typed = useTyped<HTMLTextAreaElement>(shown, (text) => {
    const read = parse(text);
    if (read.ok) {
      setError(null);
      onCommit(read.value);
    }
  });
  const onBlur = () => {
    const read = parse(typed.value);
    // Not JSON: the text stays as typed, with why, and the document keeps its last valid value.
    if (!read.ok) {
      useDocument.getState().endTyping();
      setError(read.error);
    } else typed.onBlur();
  };
  return (
    <>
      <textarea data-testid={testId} className="mono" rows={5} spellCheck={false} {...typed} onBlur={onBlur} />
      {error && <div className="field-error">{error}</div>}
    </>
  );
}

/**
 * What a start node's input field holds, read as the command line reads `--input`: JSON when the text is JSON, else
 * the text itself. Returns the value and what it was read as, for the hint under the field.
 */
export function readInput(text: string): { value: unknown; readAs: "json" | "text" | "empty" } {
  if (!text.trim()) return { value: undefined, readAs: "empty" };
  try {
    return { value: JSON.parse(text), readAs: "json" };
  } catch {
    return { value: text, readAs: "text" };
  }
}

/** The start node's input: plain text or JSON, with a hint saying which it was read as. */
function InputText({ value, onCommit, testId }: { value: unknown; onCommit: (v: unknown) => void; testId?: string }) {
  const shown = value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value, null, 2);
  const typed = useTyped<HTMLTextAreaElement>(shown, (text) => onCommit(readInput(text).value));
  const read = readInput(typed.value);
  const kind = read.readAs === "json" ? (Array.isArray(read.value) ? "a JSON list" : read.value !== null && typeof read.value === "object" ? "a JSON object" : typeof read.value === "string" ? "a JSON string" : `JSON (${read.value === null ? "null" : typeof read.value})`) : null;
  return (
    <>
      <textarea data-testid={testId} className="mono" rows={4} spellCheck={false} placeholder="Text, or JSON such as {&quot;ticket&quot;: 42}" {...typed} />
      <small className="muted" data-testid="input-read-as">{read.readAs === "empty" ? "Empty: the run starts with no input." : kind ? `Read as ${kind}.` : "Read as text (it is not JSON)."}</small>
    </>
  );
}

/** The value at a dotted key (`for_each.items`). */
export function getPath(node: Node, key: string): unknown {
  return key.split(".").reduce<unknown>((v, k) => (v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined), node);
}

/**
 * The field a nested object cannot be without, and the value it gets when another field creates the object, as the
 * node type's catalogue says (`retry.max`, 1); undefined when the object requires none.
 */
function requiredField(fields: FieldSpec[], object: string): { key: string; initial: unknown } | undefined {
  const f = fields.find((x) => x.key.startsWith(`${object}.`) && x.required != null);
  return f ? { key: f.key.slice(object.length + 1), initial: f.required } : undefined;
}

/**
 * A patch setting a dotted key. Empty values remove the key; an object left empty, or without the field it
 * requires, is removed too; an object created for another of its fields gets its required one. What an object
 * requires is read from `fields`, the node type's fields in the catalogue.
 */
export function setPath(node: Node, key: string, value: unknown, fields: FieldSpec[] = nodeTypeSpec(node.type)?.fields ?? []): Partial<Node> {
  const [head, ...rest] = key.split(".");
  const empty = value === undefined || value === "" || value === null;
  if (!rest.length) return { [head]: empty ? undefined : value } as Partial<Node>;
  const field = rest.join(".");
  const inner = { ...((node as Record<string, unknown>)[head] as Record<string, unknown> | undefined) };
  if (empty) delete inner[field];
  else inner[field] = value;
  const required = requiredField(fields, head);
  if (required && empty && field === required.key) return { [head]: undefined } as Partial<Node>;
  if (required && !empty && inner[required.key] === undefined) inner[required.key] = required.initial;
  const kept = Object.entries(inner).filter(([, v]) => v !== undefined && v !== false);
  return { [head]: kept.length ? Object.fromEntries(kept) : undefined } as Partial<Node>;
}

/** An if node's conditions, in order; the operators are the field's options in the catalogue. */
function Conditions({ node, field, set }: { node: Node; field: FieldSpec; set: (patch: Partial<Node>, typing?: string) => void }) {
  const conditions: Condition[] = node.conditions ?? [];
  const operators = field.options as Condition["operator"][];
  const change = (i: number, patch: Partial<Condition>, typing?: string) => set({ conditions: conditions.map((x, j) => (j === i ? { ...x, ...patch } : x)) }, typing);
  return (
    <div className="conditions">
      <span>{field.label}</span>
      {conditions.map((c, i) => (
        <div className="condition" key={i}>
          <select value={c.operator} onChange={(e) => change(i, { operator: e.target.value as Condition["operator"] })} aria-label={`condition ${i} operator`}>
            {operators.map((o) => <option key={o}>{o}</option>)}
          </select>
          <Text value={c.value} onCommit={(v) => change(i, { value: v }, `${node.id}/conditions/${i}`)} testId={`condition-${i}`} />
          {/* Out of the Tab order: Tab from a condition goes on to the next field, never onto a button that deletes. */}
          <button title="remove this condition" aria-label={`remove condition ${i}`} tabIndex={-1} onClick={() => set({ conditions: conditions.filter((_, j) => j !== i) })}>×</button>
        </div>
      ))}
      <button onClick={() => set({ conditions: [...conditions, { operator: operators[0], value: "" }] })} disabled={!operators.length} data-testid="add-condition">+ condition</button>
    </div>
  );
}

/**
 * An agent's MCP tools: each server in Settings (every tool), or single tools listed from the running servers.
 * Entries naming a server that Settings does not have are shown as problems, never dropped.
 */
function McpTools({ value, onCommit }: { value: unknown; onCommit: (v: unknown) => void }) {
  const configured = usePrefs((s) => s.settings?.mcp_servers);
  const servers = Object.keys(configured ?? {});
  const chosen: string[] = Array.isArray(value) ? (value as string[]) : [];
  const [listed, setListed] = useState<Record<string, string[] | string>>({});
  const toggle = (entry: string) => {
    const next = chosen.includes(entry) ? chosen.filter((e) => e !== entry) : [...chosen, entry];
    onCommit(next.length ? next : undefined);
  };
  const list = async () => {
    for (const [name, server] of Object.entries(configured ?? {})) {
      setListed((l) => ({ ...l, [name]: "listing…" }));
      const r = await commands.probeMcp(name, server).catch((e) => ({ status: "error" as const, error: { message: errorText(e) } }));
      setListed((l) => ({ ...l, [name]: r.status === "ok" ? r.data.map((t) => t.name) : (r.error as { message: string }).message }));
    }
  };
  const unknown = chosen.filter((e) => !servers.includes(e.split("/")[0]));
  return (
    <div className="mcp-tools" data-testid="field-tools.mcp">
      {servers.length === 0 && <p className="mcp-hint">No MCP servers yet: add them in Settings.</p>}
      {servers.map((server) => {
        const tools = listed[server];
        return (
          <div key={server}>
            <label className="check">
              <input type="checkbox" checked={chosen.includes(server)} onChange={() => toggle(server)} data-testid={`mcp-server-${server}`} /> {server} <span className="dim">every tool</span>
            </label>
            {Array.isArray(tools) && !chosen.includes(server) && tools.map((tool) => (
              <label className="check mcp-tool" key={tool}>
                <input type="checkbox" checked={chosen.includes(`${server}/${tool}`)} onChange={() => toggle(`${server}/${tool}`)} data-testid={`mcp-tool-${server}-${tool}`} /> {tool}
              </label>
            ))}
            {typeof tools === "string" && <div className={tools === "listing…" ? "mcp-hint" : "field-error"}>{tools}</div>}
          </div>
        );
      })}
      {unknown.map((e) => (
        <div className="field-error" key={e}>
          `{e}`: no such server in Settings <button onClick={() => toggle(e)}>remove</button>
        </div>
      ))}
      {servers.length > 0 && <button onClick={() => void list()} data-testid="mcp-list-tools">List tools</button>}
    </div>
  );
}

function FieldEditor({ node, field, models }: { node: Node; field: FieldSpec; models: string[] }) {
  const update = useDocument((s) => s.updateNode);
  const set = (patch: Partial<Node>, typing?: string) => update(node.id, patch, typing);
  const value = getPath(node, field.key);
  const commit = (v: unknown) => set(setPath(node, field.key, v));
  /** A value typed in the field: the keystrokes typed there one after another are one undo step. */
  const typed = (v: unknown) => set(setPath(node, field.key, v), `${node.id}/${field.key}`);
  const testId = `field-${field.key}`;
  const placeholder = field.placeholder ?? undefined;
  switch (field.kind) {
    case "conditions":
      return <Conditions node={node} field={field} set={set} />;
    case "checkbox":
      return (
        <label className="check">
          <input type="checkbox" data-testid={testId} checked={Boolean(value)} onChange={(e) => commit(e.target.checked || undefined)} /> {field.label}
        </label>
      );
    case "select":
      return (
        <Field label={field.label} help={field.help}>
          <select data-testid={testId} value={(value as string) ?? ""} onChange={(e) => commit(e.target.value || undefined)}>
            <option value="">default</option>
            {field.options.map((o) => <option key={o}>{o}</option>)}
          </select>
        </Field>
      );
    case "number":
      return (
        <Field label={field.label} help={field.help}>
          <NumberInput testId={testId} value={value as number | undefined} onCommit={typed} min={0} />
        </Field>
      );
    case "json":
      if (field.key === "initial_input") {
        return (
          <Field label="input (text or JSON)">
            <InputText testId={testId} value={value} onCommit={typed} />
          </Field>
        );
      }
      if (field.key === "tools.mcp") {
        // Not inside a <label>: the checkboxes have labels of their own.
        return (
          <div className="field">
            <span>{field.label}</span>
            <McpTools value={value} onCommit={commit} />
            {field.help && <small className="muted">{field.help}</small>}
          </div>
        );
      }
      return (
        <Field label={field.label} help={field.help}>
          <Json testId={testId} value={value} onCommit={typed} />
        </Field>
      );
    case "model":
      return (
        <Field label={field.label} help={field.help}>
          <Text testId={testId} list="models" value={(value as string) ?? ""} placeholder={placeholder} onCommit={(v) => typed(v.trim() || undefined)} />
          <datalist id="models">{models.map((m) => <option key={m} value={m} />)}</datalist>
        </Field>
      );
    default:
      return (
        <Field label={field.label} help={field.help}>
          <Text testId={testId} multiline={field.kind !== "text"} mono={field.kind !== "text"} value={(value as string) ?? ""} placeholder={placeholder} onCommit={(v) => typed(v.trim() ? v : undefined)} />
        </Field>
      );
  }
}

function NodeFields({ node, models }: { node: Node; models: string[] }) {
  const update = useDocument((s) => s.updateNode);
  const spec = nodeTypeSpec(node.type);
  return (
    <>
      <Field label="id">
        <IdText testId="inspector-id" value={node.id} onCommit={(v) => v.trim() && update(node.id, { id: v.trim() })} />
      </Field>
      {spec?.fields.map((f) => <FieldEditor key={f.key} node={node} field={f} models={models} />)}
    </>
  );
}

function EdgeFields({ edge }: { edge: Edge }) {
  const update = useDocument((s) => s.updateEdge);
  const source = useDocument((s) => s.workflow.nodes.find((n) => n.id === edge.from));
  const target = useDocument((s) => s.workflow.nodes.find((n) => n.id === edge.to));
  const handle = edge.handle ?? "output";
  const branch = handleName(source, handle);
  const key = edgeKey(edge);
  const set = (patch: Partial<Edge>, typing?: string) => update(key, patch, typing);
  return (
    <>
      <dl className="edge-ends">
        <dt>from</dt>
        <dd title={edge.from}>{source?.name || edge.from}</dd>
        <dt>leaves by</dt>
        <dd>
          {branch ?? "its output"} <code className="dim" data-testid="edge-handle" title="the handle id, as saved in the file">{handle}</code>
        </dd>
        <dt>to</dt>
        <dd title={edge.to}>{target?.name || edge.to}</dd>
      </dl>
      <Field label="when (natural language; the model decides)">
        <Text testId="inspector-when" multiline value={edge.when ?? ""} placeholder="e.g. the review found problems" onCommit={(v) => set({ when: v.trim() ? v : undefined }, `${key}/when`)} />
      </Field>
      <Field label="if (expression guard)" help="Followed only when true, e.g. review.data.score >= 8">
        <Text testId="inspector-if" value={edge.if ?? ""} onCommit={(v) => set({ if: v.trim() ? v : undefined }, `${key}/if`)} />
      </Field>
      <Field label="max iterations" help="How many times a loop may follow this edge in one run">
        <NumberInput testId="inspector-max-iterations" min={1} value={edge.max_iterations ?? undefined} onCommit={(v) => set({ max_iterations: v }, `${key}/max_iterations`)} />
      </Field>
      <Field label="id">
        <IdText value={edge.id ?? ""} placeholder="(none)" onCommit={(v) => set({ id: v.trim() || undefined })} />
      </Field>
    </>
  );
}

function RunDetails({ id }: { id: string }) {
  const run = useNodeRun(id);
  // Only node types with a pinned output (agents, scripts) offer to pin one.
  const type = useDocument((s) => s.workflow.nodes.find((n) => n.id === id)?.type);
  const pinnable = Boolean(type && nodeTypeSpec(type)?.fields.some((f) => f.key === "pinned"));
  const pick = useLayoutPrefs((s) => s.inspector.iteration);
  const setPick = (iteration: number) => useLayoutPrefs.getState().inspect("run", iteration);
  const onModel = useRunControl((s) => s.mode === "model");
  if (!run || !run.iterations.length) return <p className="muted" data-testid="run-details-empty">This node has not run yet. Run the workflow to see what it received and produced.</p>;
  const it = run.iterations.find((i) => i.iteration === pick) ?? run.iterations[run.iterations.length - 1];
  return (
    <section className="run-details" data-testid="run-details">
      {run.iterations.length > 1 && (
        <select value={it.iteration} onChange={(e) => setPick(Number(e.target.value))} aria-label="iteration">
          {run.iterations.map((i) => <option key={i.iteration} value={i.iteration}>iteration {i.iteration}</option>)}
        </select>
      )}
      <div className="muted">
        {run.status}
        {it.durationMs != null ? ` · ${it.durationMs} ms` : ""}
        {it.tokens != null ? ` · ${it.tokens} tokens` : ""}
        {tokensUnreported({ tokens: it.tokens, succeeded: it.result?.status === "success", type, onModel }) && <span data-testid="run-details-tokens"> · {TOKENS_UNREPORTED}</span>}
      </div>
      {it.instruction && (<><h4>Rendered prompt</h4><pre>{it.instruction}</pre></>)}
      {run.status === "running" && run.streamed && (<><h4>Streaming</h4><pre>{run.streamed}</pre></>)}
      {asksModel(type) && <Conversation id={id} iteration={it.iteration} />}
      {it.result && (
        <>
          <h4>Output</h4>
          <pre data-testid="run-output">{JSON.stringify(it.result.data, null, 2)}</pre>
          {it.result.status === "success" && asksModel(type) && <ResultFork id={id} iteration={it.iteration} data={it.result.data} />}
          {it.result.status === "success" && pinnable && (
            <button
              onClick={() => useDocument.getState().updateNode(id, { pinned: it.result!.data })}
              title="Later runs use this output instead of running the node (Settings → pinned output clears it)"
              data-testid="pin-output"
            >
              Pin this output
            </button>
          )}
        </>
      )}
      {it.result?.error && (<><h4>Error</h4><pre className="field-error">{inAppWords(it.result.error, it.result.errorCode)}</pre>{it.result.errorCode && <code className="code-chip">{it.result.errorCode}</code>}</>)}
      {it.result && it.result.toolCalls.length > 0 && (
        <>
          <h4>Tool calls</h4>
          {it.result.toolCalls.map((c, i) => <pre key={i}>{c.tool}({JSON.stringify(c.input)}) → {c.error ? `error: ${c.error}` : JSON.stringify(c.output)}</pre>)}
        </>
      )}
    </section>
  );
}

/** The inspector's title line, with the pin (stay open with nothing selected) and close buttons. */
function InspectorHeader({ icon, title, subtitle }: { icon?: React.ReactNode; title: string; subtitle?: string }) {
  const pinned = useLayoutPrefs((p) => p.inspectorPinned);
  const prefs = useLayoutPrefs.getState();
  return (
    <header className="inspector-head">
      {icon}
      <div className="inspector-title">
        <h2 className="entity" title={title}>{title}</h2>
        {subtitle && <div className="dim">{subtitle}</div>}
      </div>
      <button className="icon-button" onClick={() => prefs.setInspectorPinned(!pinned)} aria-pressed={pinned} aria-label={pinned ? "Unpin the inspector" : "Pin the inspector open"} title={pinned ? "Pinned open: click to let it close when nothing is selected" : "Keep the inspector open when nothing is selected"} data-testid="inspector-pin">
        {pinned ? <Pin size={15} aria-hidden /> : <PinOff size={15} aria-hidden />}
      </button>
      <button className="icon-button" onClick={() => (prefs.setInspectorPinned(false), useDocument.getState().select({ nodes: [], edges: [] }), prefs.refs?.inspector.current?.collapse())} aria-label="Close the inspector" title="Close (Escape clears the selection)" data-testid="inspector-close">
        <X size={15} aria-hidden />
      </button>
    </header>
  );
}

/** Opens the child workflow a `workflow` node runs, found beside the open file; the toolbar's breadcrumb leads back. */
function OpenChild({ written }: { written?: string | null }) {
  const saved = useDocument((s) => s.path !== null);
  const why = !written ? "Name the child workflow's file first" : !saved ? "Save this workflow first: its child is found beside its file" : `Open ${written}`;
  return (
    <button className="open-child" disabled={!written || !saved} onClick={() => written && void files.openChild(written)} title={why} data-testid="open-child">
      <CornerRightDown size={14} aria-hidden /> Open child workflow
    </button>
  );
}

function WorkflowFields({ models }: { models: string[] }) {
  const workflow = useDocument((s) => s.workflow);
  const edit = useDocument((s) => s.edit);
  return (
    <aside className="inspector" data-testid="inspector-workflow">
      <InspectorHeader title="Workflow" subtitle="its name, description and default model" />
      <Field label="name">
        <Text value={workflow.name} onCommit={(v) => edit((w) => ({ ...w, name: v }), "workflow/name")} />
      </Field>
      <Field label="description">
        <Text multiline value={workflow.description ?? ""} onCommit={(v) => edit((w) => ({ ...w, description: v.trim() ? v : undefined }), "workflow/description")} />
      </Field>
      <Field label="default model">
        <Text list="models" value={workflow.defaults?.model ?? ""} placeholder="provider/model" onCommit={(v) => edit((w) => ({ ...w, defaults: { ...(w.defaults ?? {}), model: v.trim() || undefined } }), "workflow/model")} />
        <datalist id="models">{models.map((m) => <option key={m} value={m} />)}</datalist>
      </Field>
      <p className="muted">Click a node or an edge to edit it; Shift-drag to select several.</p>
    </aside>
  );
}

/** `b`, or `a` when the two differ in nothing but their place on the canvas (a drag frame changes nothing shown here). */
function samePlaceless<T extends { position?: unknown }>(a: T | undefined, b: T | undefined): T | undefined {
  if (!a || !b || a === b) return b;
  const ka = Object.keys(a) as (keyof T)[];
  const kb = Object.keys(b) as (keyof T)[];
  if (ka.length !== kb.length) return b;
  return kb.every((k) => k === "position" || a[k] === b[k]) ? a : b;
}

export function Inspector({ models }: { models: string[] }) {
  const selection = useDocument((s) => s.selection);
  const tab = useLayoutPrefs((s) => s.inspector.tab);
  const setTab = (t: InspectorTab) => useLayoutPrefs.getState().inspect(t);
  const nodeId = selection.nodes.length === 1 && !selection.edges.length ? selection.nodes[0] : undefined;
  const edgeId = !selection.nodes.length && selection.edges.length === 1 ? selection.edges[0] : undefined;
  // Subscribed to what is shown, not to the whole document: a drag frame or an edit elsewhere in a 5,000-node
  // workflow does not render the inspector again.
  const shown = useRef<Node | undefined>(undefined);
  const nodeIndex = useDocument((s) => (nodeId ? s.workflow.nodes.findIndex((n) => n.id === nodeId) : -1));
  const node = useDocument((s) => (shown.current = samePlaceless(shown.current, nodeIndex >= 0 ? s.workflow.nodes[nodeIndex] : undefined)));
  const edgeIndex = useDocument((s) => (edgeId ? s.workflow.edges.findIndex((e) => edgeKey(e) === edgeId) : -1));
  const edge = useDocument((s) => (edgeIndex >= 0 ? s.workflow.edges[edgeIndex] : undefined));
  const findings = useValidation((s) => (node ? s.byNode[node.id] : edge ? (s.byEdge[edgeKey(edge)] ?? s.byEdge[`${edge.from}->${edge.to}`]) : undefined));
  // Counted from what exists (and so is highlighted), never from ids left over in the selection; only for a
  // selection of several.
  const several = selection.nodes.length + selection.edges.length > 1;
  const counted = useDocument((s) => {
    if (!several) return "0 0";
    const [ids, keys] = [nodeIds(s.workflow.nodes), edgeKeys(s.workflow.edges)];
    return `${new Set(selection.nodes.filter((id) => ids.has(id))).size} ${new Set(selection.edges.filter((key) => keys.has(key))).size}`;
  });
  const [nodeCount, edgeCount] = counted.split(" ").map(Number);
  const count = nodeCount + edgeCount;
  if (!node && !edge) {
    if (count > 1)
      return (
        <aside className="inspector" data-testid="inspector-multi">
          <InspectorHeader title={`${count} selected`} />
          <p className="muted">
            {nodeCount} node{nodeCount === 1 ? "" : "s"}, {edgeCount} edge{edgeCount === 1 ? "" : "s"}. Delete removes them; Ctrl+D duplicates the nodes.
          </p>
        </aside>
      );
    return <WorkflowFields models={models} />;
  }
  const spec = node ? nodeTypeSpec(node.type) : undefined;
  return (
    <aside className="inspector" data-testid="inspector">
      <InspectorHeader
        icon={node ? <NodeIcon type={node.type} size={16} /> : null}
        title={node ? node.name || node.id : `Edge · ${nodeName(edge!.from)} → ${nodeName(edge!.to)}`}
        subtitle={node ? `${spec?.label ?? node.type}${node.name ? ` · ${node.id}` : ""}` : undefined}
      />
      {node ? (
        // Manual activation: a tab changes when it is clicked or chosen with Enter/Space, never because focus passed it.
        <Tabs.Root value={tab} onValueChange={(t) => setTab(t as InspectorTab)} activationMode="manual">
          <Tabs.List className="tabs" aria-label="node">
            <Tabs.Trigger value="settings" className="tab" data-testid="tab-settings">Settings</Tabs.Trigger>
            <Tabs.Trigger value="run" className="tab" data-testid="tab-last-run">Last run</Tabs.Trigger>
          </Tabs.List>
          {/* Keyed by position, not id: renaming a node keeps its fields (and the focus) where they are. */}
          <Tabs.Content value="settings">
            {node.type === "workflow" && !onServer() && <OpenChild written={node.workflow} />}
            <NodeFields key={nodeIndex} node={node} models={models} />
          </Tabs.Content>
          <Tabs.Content value="run"><RunDetails id={node.id} /></Tabs.Content>
        </Tabs.Root>
      ) : (
        <EdgeFields key={edgeIndex} edge={edge!} />
      )}
      {/* Last, held at the bottom of the view: findings that come and go as a field is typed in never move the fields. */}
      {findings && findings.length > 0 && (
        <ul className="findings-inline" data-testid="inspector-findings">
          {findings.map((f, i) => <li key={i} className={f.level}>{inAppWords(f.message, f.code)} <code className="code-chip">{f.code}</code></li>)}
        </ul>
      )}
    </aside>
  );
}
