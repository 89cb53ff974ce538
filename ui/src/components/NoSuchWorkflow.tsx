// In a browser, an address whose `?workflow=NAME` names no workflow the server serves: the page says so, naming it,
// and lists the workflows that are served (each a link). No canvas is shown: an editable "Untitled workflow" there
// would look like the one asked for.
import { create } from "zustand";
import { servedWorkflows } from "../transport";

type Missing = { name: string; served: string[] };

export const useMissingWorkflow = create<{ missing: Missing | null }>(() => ({ missing: null }));

/** The address named `name`, which the server does not serve: the page says so, with what it does serve. */
export async function workflowNotServed(name: string): Promise<void> {
  useMissingWorkflow.setState({ missing: { name, served: await servedWorkflows() } });
}

export function NoSuchWorkflow({ missing }: { missing: Missing }) {
  const link = (name: string) => `${location.pathname}?workflow=${encodeURIComponent(name)}`;
  return (
    <main className="no-such-workflow" role="alert" data-testid="no-such-workflow">
      <h1>
        This server serves no workflow named “<span data-testid="missing-name">{missing.name}</span>”
      </h1>
      <p>Check the name in the address (?workflow=NAME): it is the workflow's name, as in its file's <code>name:</code>.</p>
      {missing.served.length ? (
        <>
          <p>The workflows it serves:</p>
          <ul data-testid="served-workflows">
            {missing.served.map((w) => (
              <li key={w}>
                <a href={link(w)}>{w}</a>
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p>It serves no workflow at the moment: add a file to its workflows folder (switchyard serve --workflows DIR).</p>
      )}
    </main>
  );
}
