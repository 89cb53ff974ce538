// Unsaved changes, asked about the same way whatever would lose them: closing the window, New, Open, a recent file, a
// stored run opened, replayed or continued — Save, Don't save, or Cancel (Radix AlertDialog: focus stays inside,
// Escape cancels). Save that does not complete (the file picker cancelled, the write refused) keeps the document.
import * as AlertDialog from "@radix-ui/react-alert-dialog";
import { useDocument } from "../store/document";
import { baseName } from "../model/paths";
import { useDialogs, type UnsavedAnswer } from "../store/dialogs";
import * as files from "../store/files";

export function CloseDialog() {
  const closing = useDialogs((s) => s.shown.close);
  const question = useDialogs((s) => s.unsaved);
  const name = useDocument((d) => d.workflow.name);
  const path = useDocument((d) => d.path);
  const open = closing || question !== null;
  const answer = async (a: UnsavedAnswer) => {
    if (closing) return void files.closeWindow(a);
    if (a !== "save") return useDialogs.getState().answerUnsaved(a);
    await files.save();
    // Not saved (the picker was cancelled, or the write failed): what was asked for does not happen.
    useDialogs.getState().answerUnsaved(useDocument.getState().dirty ? "cancel" : "save");
  };
  const doing = closing ? "closing" : (question?.doing ?? "");
  return (
    <AlertDialog.Root open={open} onOpenChange={(o) => !o && void answer("cancel")}>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="dialog-overlay" />
        <AlertDialog.Content className="dialog" data-testid="close-dialog">
          <AlertDialog.Title className="dialog-title">Save changes to “{name || "Untitled"}” before {doing}?</AlertDialog.Title>
          <AlertDialog.Description className="message">
            {path ? `Your changes to ${baseName(path)} are lost if you don't save them.` : "This workflow has never been saved: Save asks where to put it."}
          </AlertDialog.Description>
          <div className="actions">
            <button onClick={() => void answer("discard")} data-testid="close-discard">Don&apos;t save</button>
            <AlertDialog.Cancel asChild>
              <button data-testid="close-cancel">Cancel</button>
            </AlertDialog.Cancel>
            <AlertDialog.Action asChild>
              <button className="primary" onClick={(e) => (e.preventDefault(), void answer("save"))} data-testid="close-save" autoFocus>Save</button>
            </AlertDialog.Action>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}
