// Closing the window with unsaved changes: Save, Don't save, or Cancel (Radix AlertDialog: focus stays inside,
// Escape cancels). Save that does not complete (the file picker cancelled, the write refused) keeps the window open.
import * as AlertDialog from "@radix-ui/react-alert-dialog";
import { useDocument } from "../store/document";
import { baseName } from "../model/paths";
import { useDialogs } from "../store/dialogs";
import { useFiles } from "../store/files";

export function CloseDialog() {
  const open = useDialogs((s) => s.shown.close);
  const name = useDocument((d) => d.workflow.name);
  const path = useDocument((d) => d.path);
  const answer = (a: "save" | "discard" | "cancel") => void useFiles.getState().closeWindow(a);
  return (
    <AlertDialog.Root open={open} onOpenChange={(o) => !o && answer("cancel")}>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="dialog-overlay" />
        <AlertDialog.Content className="dialog" data-testid="close-dialog">
          <AlertDialog.Title className="dialog-title">Save changes to “{name || "Untitled"}” before closing?</AlertDialog.Title>
          <AlertDialog.Description className="message">
            {path ? `Your changes to ${baseName(path)} are lost if you don't save them.` : "This workflow has never been saved: Save asks where to put it."}
          </AlertDialog.Description>
          <div className="actions">
            <button onClick={() => answer("discard")} data-testid="close-discard">Don&apos;t save</button>
            <AlertDialog.Cancel asChild>
              <button data-testid="close-cancel">Cancel</button>
            </AlertDialog.Cancel>
            <AlertDialog.Action asChild>
              <button className="primary" onClick={(e) => (e.preventDefault(), answer("save"))} data-testid="close-save" autoFocus>Save</button>
            </AlertDialog.Action>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}
