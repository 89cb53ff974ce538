// What a command asks before it acts on the document: the field being typed in is committed first, unsaved changes
// are saved or dropped as the person answers (Save / Don't save / Cancel), and files come from the OS picker. Holds
// no state, and knows nothing of what the command then does with the file or the answer.
import { open as nativeOpen, save as nativeSave } from "@tauri-apps/plugin-dialog";
import { useDialogs } from "./dialogs";
import { commitHeld, useDocument } from "./document";

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
 * Commits the field being edited. What is typed goes into the document as it is typed; only a field that cannot take
 * half-typed text (a node's id) holds a draft, committed here, so every command that reads the document — save, run,
 * export, switching files, closing — acts on what the person sees. The focus stays in the field.
 */
export function commitEditing(): void {
  commitHeld();
}

/**
 * Whether the open document may be replaced by what the person is `doing` ("opening another workflow"): it has no
 * unsaved changes, or they answer Save (and it was saved) or Don't save — the question closing the window asks.
 */
export async function confirmDiscard(doing: string): Promise<boolean> {
  commitEditing();
  if (!useDocument.getState().dirty) return true;
  const override = dialogOverride()?.discard;
  if (override !== undefined) return override;
  return (await useDialogs.getState().askUnsaved(doing)) !== "cancel";
}
