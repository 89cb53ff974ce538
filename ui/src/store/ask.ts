// What a command asks before it acts on the document: the field being typed in is committed first, unsaved changes
// are dropped only when the person agrees, and files come from the OS picker. Holds no state, and knows nothing of
// what the command then does with the file or the answer.
import { ask, open as nativeOpen, save as nativeSave } from "@tauri-apps/plugin-dialog";
import { useDocument } from "./document";

export type FileFilter = { name: string; extensions: string[] };
export const WORKFLOW_FILES: FileFilter[] = [{ name: "Workflows", extensions: ["yaml", "yml", "json"] }];
export const ANSWERS_FILES: FileFilter[] = [{ name: "Answers files", extensions: ["yaml", "yml", "json"] }];

// End-to-end tests cannot click in the OS file picker, so they may name the path it would return. Only the picker is
// replaced; opening and saving still go through the real commands.
type DialogOverride = { open?: string; save?: string; discard?: boolean };
const dialogOverride = () => (window as unknown as { __switchyardDialog?: DialogOverride }).__switchyardDialog;

/** A file the person picks to open, or null when they cancel. */
export async function pickFile(filters: FileFilter[]): Promise<string | null> {
  const o = dialogOverride()?.open;
  if (o) return o;
  const file = await nativeOpen({ multiple: false, filters });
  return typeof file === "string" ? file : null;
}

/** Where the person saves a workflow, or null when they cancel. */
export const pickSavePath = async (defaultPath: string): Promise<string | null> => dialogOverride()?.save ?? (await nativeSave({ filters: WORKFLOW_FILES, defaultPath }));

/**
 * Commits the field being edited. Inspector fields commit when they lose focus (one undo step per edit, not per key),
 * so every command that reads the document — save, run, export, switching files, closing — calls this first and acts
 * on what the person sees. The focus goes back to the field.
 */
export function commitEditing(): void {
  const el = document.activeElement as HTMLInputElement | HTMLTextAreaElement | null;
  if (!el || !el.matches?.("input, textarea") || el.closest("[role=dialog]")) return;
  const range = "selectionStart" in el ? [el.selectionStart, el.selectionEnd] : null;
  el.blur();
  el.focus({ preventScroll: true });
  try {
    if (range && range[0] != null) el.setSelectionRange(range[0], range[1]);
  } catch {
    /* inputs of some types have no selection */
  }
}

/** Whether the open document may be replaced: it has no unsaved changes, or the person lets them go. */
export async function confirmDiscard(): Promise<boolean> {
  commitEditing();
  return !useDocument.getState().dirty || (dialogOverride()?.discard ?? (await ask("Discard unsaved changes?", { title: "Switchyard", kind: "warning" })));
}
