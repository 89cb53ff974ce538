// "Fork from here" in the Last run tab: what if the model had said something else? On a model turn of an agent's
// conversation (or on its result as a whole, for an agent that took no turns), a dialog shows what the model said,
// editable; Run fork starts a run of the workflow on the canvas through the one way runs start (`start_run`, with a
// fork), which takes everything before that point from the run shown at no model or tool call and goes on live from
// the answer given. JSON for a node with an output schema, checked before anything runs.
import { memo, useState } from "react";
import * as Dialog from "@radix-ui/react-dialog";
import { GitFork } from "lucide-react";
import { useDocument } from "../store/document";
import { useRun } from "../store/run";
import * as runControl from "../store/runControl";
import { useTurns, type TurnView } from "../store/turns";
import { displayName } from "../model/names";
import { onServer } from "../transport";

const NO_TURNS: TurnView[] = [];

/** Why `answer` cannot be given at a node (JSON for one with an output schema), or null when it can. */
export function forkAnswerProblem(answer: string, structured: boolean): string | null {
  if (!answer.trim()) return "Write what the model should have said: the fork goes on from it.";
  if (!structured) return null;
  try {
    JSON.parse(answer);
    return null;
  } catch (e) {
    return `This node has an output schema, so the answer is JSON: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** A model turn a fork can be given at: the node's own (not a `for_each` item's or a subagent's), of its first execution. */
export function forkableTurn(turn: TurnView): boolean {
  return turn.kind === "turn" && turn.iteration === 1 && /^t\d+$/.test(turn.at);
}

/** What a node's result said, as the fork dialog offers it for editing: its JSON with an output schema, else its text. */
export function resultSaid(data: unknown, structured: boolean): string {
  if (structured) return JSON.stringify(data ?? null, null, 2);
  const text = (data as { text?: unknown } | null)?.text;
  return typeof text === "string" ? text : JSON.stringify(data ?? null);
}

/** The Fork from here button and its dialog: fork run `runId` at `node` (its model turn `turn`; null: its result). */
export const ForkButton = memo(function ForkButton({ runId, node, turn, said }: { runId: string; node: string; turn: number | null; said: string }) {
  const structured = useDocument((s) => s.workflow.nodes.some((n) => n.id === node && n.output_schema != null));
  const name = useDocument((s) => displayName(s.workflow, node));
  const busy = useRun((s) => s.status === "running" || s.status === "paused");
  const [open, setOpen] = useState(false);
  const [answer, setAnswer] = useState(said);
  const [problem, setProblem] = useState<string | null>(null);
  if (onServer()) return null; // a server's runs are forked with `switchyard run --fork`, or in the desktop app
  const where = turn ? `turn ${turn} of ${name}` : name;
  const show = (o: boolean) => {
    setOpen(o);
    if (o) {
      setAnswer(said);
      setProblem(null);
    }
  };
  const run = () => {
    const wrong = forkAnswerProblem(answer, structured);
    setProblem(wrong);
    if (wrong) return;
    setOpen(false);
    void runControl.fork(runId, node, turn, answer);
  };
  return (
    <Dialog.Root open={open} onOpenChange={show}>
      <Dialog.Trigger asChild>
        <button
          className="fork-button"
          disabled={busy}
          aria-label={`Fork from here: ${where}`}
          title={busy ? "Wait until the run on the canvas ends (or cancel it) to fork" : `Fork from here: a new run where the model said something else at ${where}; what came before is reused at no model or tool call`}
          data-testid={turn ? `fork-turn-${turn}` : "fork-result"}
        >
          <GitFork size={12} aria-hidden /> Fork from here
        </button>
      </Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content className="dialog" data-testid="fork-dialog">
          <Dialog.Title className="dialog-title">Fork at {where}</Dialog.Title>
          <Dialog.Description className="message">
            A new run of the workflow on the canvas. Everything before this point is taken from run {runId.slice(0, 8)} with no model or tool call; from here it runs live, as if the model had said:
          </Dialog.Description>
          <label className="fork-answer">
            <span className="muted small">{structured ? "What the model said (JSON: this node has an output schema)" : "What the model said"}</span>
            <textarea
              rows={8}
              className="mono"
              value={answer}
              autoFocus
              spellCheck={false}
              aria-invalid={problem != null}
              onChange={(e) => (setAnswer(e.target.value), problem && setProblem(null))}
              onKeyDown={(e) => e.key === "Enter" && (e.ctrlKey || e.metaKey) && (e.preventDefault(), run())}
              data-testid="fork-answer"
            />
          </label>
          {problem && <p className="field-error" role="alert" data-testid="fork-problem">{problem}</p>}
          <div className="actions">
            <Dialog.Close asChild>
              <button data-testid="fork-cancel">Cancel</button>
            </Dialog.Close>
            <button className="primary" onClick={run} title="Start the fork (Ctrl+Enter)" data-testid="fork-run">
              <GitFork size={13} aria-hidden /> Run fork
            </button>
          </div>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
});

/**
 * Fork from here on an agent's result as a whole, when its first execution took no model turn a fork could be given
 * at (a run on an answers file); an agent with turns is forked at one of them, in its Conversation.
 */
export const ResultFork = memo(function ResultFork({ id, iteration, data }: { id: string; iteration: number; data: unknown }) {
  const runId = useRun((s) => s.runId);
  const turns = useTurns((s) => (s.runId === runId ? s.byNode[id] ?? NO_TURNS : NO_TURNS));
  const structured = useDocument((s) => s.workflow.nodes.some((n) => n.id === id && n.output_schema != null));
  if (!runId || iteration !== 1 || turns.some(forkableTurn)) return null;
  return <ForkButton runId={runId} node={id} turn={null} said={resultSaid(data, structured)} />;
});
