// Workflow files: opening one (of any supported format, laid out when it keeps no positions), a new workflow, saving,
// saving as, exporting canonical YAML, and closing the window with unsaved changes. Every file goes through the typed
// commands. Knows nothing of how a run goes; an opened file only says where its runs take their answers from. No
// store: each is a function over the stores it changes (`import * as files from "./files"`).
import { commands, unwrap } from "../api";
import { layout, needsLayout } from "../model/layout";
import { baseName, childPath } from "../model/paths";
import { commitEditing, confirmDiscard, pickFile, pickSavePath, WORKFLOW_FILES } from "./ask";
import { useDialogs } from "./dialogs";
import { emptyWorkflow, useDocument } from "./document";
import { failWith, useMessages } from "./messages";
import { usePrefs } from "./prefs";
import { freshRunView } from "./replay";
import { answersForNextDocument } from "./runControl";
import { useTrail } from "./trail";
import { useView } from "./view";
import { appWindow } from "../transport";

const POSITIONLESS_FORMATS = new Set(["sweny", "tea", "openexpertise"]);

const info = (text: string) => useMessages.getState().info(text);
const slug = (name: string) => name.replace(/\W+/g, "-").toLowerCase();

async function writeTo(file: string) {
  try {
    await unwrap(commands.saveFile(file, useDocument.getState().workflow));
    useDocument.getState().markSaved(file);
    usePrefs.getState().remember(file);
    info(`Saved ${baseName(file)}`);
  } catch (e) {
    failWith("Could not save", e, file);
  }
}

const UNTITLED = emptyWorkflow().name;

/**
 * Where Save As proposes to put a workflow never saved: the folder of the file opened last, else the person's
 * Documents folder, else their home folder (never the folder the process happened to start in).
 */
async function saveFolder(): Promise<string | null> {
  const last = usePrefs.getState().recentFiles[0];
  if (last?.includes("/")) return last.replace(/\/[^/]*$/, "") || "/";
  try {
    const { documentDir, homeDir } = await import("@tauri-apps/api/path");
    return (await documentDir().catch(() => null)) || (await homeDir().catch(() => null)) || null;
  } catch {
    return null;
  }
}

/** Another document is on the canvas: no run shown, and no approval put off or noted. */
function documentShown() {
  freshRunView(null);
  useDialogs.getState().resetApprovals(true);
}

/**
 * Opens workflow file `file` (of any supported format, laid out when it keeps no positions) in place of the document.
 * `keepEdits`: for the file the window was started with, read while
 * the empty canvas already takes edits: if the person changed the document meanwhile, their changes stay and the
 * message says the file was not shown (nothing a person does is replaced without a word). Says whether it was shown.
 */
export async function open(file: string, { keepEdits = false }: { keepEdits?: boolean } = {}): Promise<boolean> {
  try {
    const opened = await unwrap(commands.openFile(file));
    // `npm run bench:app` tells the engine's part of an open (reading the file) from the window's by this mark.
    performance.mark("switchyard:file-read");
    let workflow = opened.workflow;
    const imported = opened.format !== "switchyard";
    // Files of systems that keep no positions (SWEny, TEA, OpenExpertise), and canonical files without them, are
    // laid out by ELK; the importer's own placement is only a fallback for the command line.
    if (POSITIONLESS_FORMATS.has(opened.format) || needsLayout(workflow)) workflow = await layout(workflow);
    // The run source follows the file: its answers file when one lies beside it, else the model; the message
    // says which. Decided before the document shows, so the toolbar never shows another file's source.
    const beside = await Promise.resolve().then(() => commands.scriptBeside(opened.path ?? file)).catch(() => null);
    const script = beside ?? null;
    if (keepEdits && useDocument.getState().dirty) {
      useMessages.getState().error(`Kept your changes: ${baseName(file)} was not opened over them. Save them first, then open ${baseName(file)} again.`, "EDITED_BEFORE_OPEN");
      return false;
    }
    answersForNextDocument(script);
    useDocument.getState().load(workflow, imported ? null : opened.path, opened.format, opened.notes);
    documentShown();
    usePrefs.getState().remember(file);
    const scriptNote = script ? ` · runs offline with answers from ${baseName(script)}` : "";
    info(imported ? `Imported ${opened.format} file ${baseName(file)}${opened.notes.length ? ` (${opened.notes.length} notes)` : ""}${scriptNote}` : `Opened ${baseName(file)}${scriptNote}`);
    useView.getState().requestView("open");
    return true;
  } catch (e) {
    failWith("Could not open", e, file);
    return false;
  }
}

/** Opens a workflow file the person picks (asking first about unsaved changes). */
export async function openPicked(): Promise<void> {
  if (!(await confirmDiscard("opening another workflow"))) return;
  const file = await pickFile(WORKFLOW_FILES);
  if (file && (await open(file))) useTrail.getState().clear();
}

/** Opens a recent file (asking first about unsaved changes). */
export async function openRecent(file: string): Promise<void> {
  if (!(await confirmDiscard(`opening ${baseName(file)}`))) return;
  if (await open(file)) useTrail.getState().clear();
}

/**
 * Opens the child workflow a `workflow` node runs (`written`, relative to the open file), asking first about unsaved
 * changes; the toolbar's breadcrumb then leads back. A workflow never saved has no folder its children are found in.
 */
export async function openChild(written: string): Promise<void> {
  const parent = useDocument.getState().path;
  if (!parent) {
    useMessages.getState().error(`Save this workflow first: \`${written}\` is found beside its file.`, "CHILD_NOT_CHECKED");
    return;
  }
  const file = childPath(parent, written);
  if (!(await confirmDiscard(`opening ${baseName(file)}`))) return;
  if (await open(file)) useTrail.getState().descend(parent);
}

/** Goes back up to the parent at `at` of the breadcrumb (asking first about unsaved changes). */
export async function backTo(at: number): Promise<void> {
  const parent = useTrail.getState().parents[at];
  if (!parent || !(await confirmDiscard(`going back to ${baseName(parent)}`))) return;
  if (await open(parent)) useTrail.getState().ascend(at);
}

export async function newWorkflow(): Promise<void> {
  if (!(await confirmDiscard("starting a new workflow"))) return;
  useDocument.getState().load(emptyWorkflow(), null); // it runs on a model: it brings no answers file
  useTrail.getState().clear();
  documentShown();
  useView.getState().requestView("open");
}

export async function save(): Promise<void> {
  commitEditing();
  const path = useDocument.getState().path;
  if (!path) return saveAs();
  await writeTo(path);
}

export async function saveAs(): Promise<void> {
  commitEditing();
  const { path, workflow } = useDocument.getState();
  const folder = path ? null : await saveFolder();
  const file = await pickSavePath(path ?? `${folder ? `${folder.replace(/\/$/, "")}/` : ""}${slug(workflow.name)}.yaml`);
  if (!file) return;
  // A workflow still called "Untitled workflow" takes the name of the file it is saved as.
  const stem = baseName(file).replace(/\.(json|ya?ml)$/i, "");
  if (useDocument.getState().workflow.name === UNTITLED && stem) useDocument.getState().edit((w) => ({ ...w, name: stem }));
  await writeTo(file);
}

/** Writes canonical YAML to a file the person picks; the open document keeps its own path and unsaved state. */
export async function exportYaml(): Promise<void> {
  commitEditing();
  const { path, workflow } = useDocument.getState();
  const suggested = (path ? baseName(path).replace(/\.(json|ya?ml)$/i, "") : slug(workflow.name)) + ".yaml";
  const file = await pickSavePath(path ? path.replace(/[^/]*$/, suggested) : suggested);
  if (!file) return;
  try {
    await unwrap(commands.saveFile(file, workflow));
    info(`Exported canonical YAML to ${baseName(file)}`);
  } catch (e) {
    failWith("Could not export to", e, file);
  }
}

/** The answer to "save before closing?": save then close, close without saving, or stay. */
export async function closeWindow(answer: "save" | "discard" | "cancel"): Promise<void> {
  commitEditing();
  const closeDialog = () => useDialogs.getState().setDialog("close", false);
  if (answer === "cancel") return closeDialog();
  if (answer === "save") {
    await save();
    if (useDocument.getState().dirty) return; // not saved (the person cancelled the file picker, or it failed)
  }
  closeDialog();
  if (!appWindow()) return;
  const { getCurrentWindow } = await import("@tauri-apps/api/window");
  await getCurrentWindow().destroy();
}
