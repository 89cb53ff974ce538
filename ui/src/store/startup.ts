// What the window does once when it opens: takes the engine's node types, the preferences and Settings, opens the
// file it was started with, finds the default model, and lists stored runs, offering at once those a crash cut
// short. Holds no state of its own.
import { commands } from "../api";
import { useNodeTypes, type NodeTypeSpec } from "../model/nodeTypes";
import * as files from "./files";
import * as storedRuns from "./history";
import { useLayoutPrefs } from "./layoutPrefs";
import { errorCode, failWith, useMessages } from "./messages";
import { usePrefs } from "./prefs";
import { useRunControl } from "./runControl";
import { onServer } from "../transport";
import { workflowNotServed } from "../components/NoSuchWorkflow";

export async function startUp(): Promise<void> {
  try {
    const specs = await commands.nodeTypes();
    if (Array.isArray(specs) && specs.length) useNodeTypes.getState().set(specs as NodeTypeSpec[]);
  } catch (e) {
    failWith("Could not read the node types from the engine", e);
  }
  await usePrefs.getState().loadPrefs();
  const startup = await commands.startupFile().catch(async (e) => {
    // In a browser, `?workflow=NAME` naming no served workflow: the page says so rather than showing an empty canvas.
    const asked = onServer() ? new URLSearchParams(location.search).get("workflow") : null;
    if (asked !== null && errorCode(e) === "NO_SUCH_WORKFLOW") await workflowNotServed(asked);
    return null;
  });
  if (startup) {
    // Changes made on the empty canvas while the file was read are kept (and the message says so), not replaced.
    const shown = await files.open(startup.path, { keepEdits: true });
    // The answers file given with it belongs to that file: not to the changes kept in its place.
    if (shown && startup.answersPath) useRunControl.setState({ answersPath: startup.answersPath });
  }
  await usePrefs.getState().loadSettings();
  await storedRuns.refresh();
  // Runs whose process died are offered at once: they can go on where they stopped.
  const interrupted = await storedRuns.interruptedRuns();
  if (interrupted.length) {
    useLayoutPrefs.getState().setPanel("history");
    useMessages.getState().error(`${interrupted.length} run${interrupted.length > 1 ? "s were" : " was"} interrupted when Switchyard stopped: History → Resume runs it on; nodes that completed do not run again.`);
  }
}
