// Commands only the desktop app can do. In a browser served by `switchyard serve` the page cannot keep a file on the
// person's disk nor change the machine's settings: menus, the toolbar and Find do not offer these, and a shortcut that
// names one says plainly why (a message), never a silent failure.
import { useMessages } from "./store/messages";
import { onServer } from "./transport";

export const NOT_IN_BROWSER = {
  new: "New workflow is not available in a browser: the server's workflows are the files in its workflows folder (add a file there and the server serves it within 2 s).",
  open: "Opening a file from this computer is not available in a browser: open one of the server's workflows with ?workflow=NAME in the address, or open a run from History.",
  save: "Saving is not available in a browser: the server's workflows are files in its folder; edit them there (the server reads a changed file within 2 s).",
  export: "Exporting a file is not available in a browser: the server's workflows are files in its folder.",
  settings: "Settings are not available in a browser: the server's workers use their own settings (switchyard worker on the server).",
} as const;

/** `run`, or in a browser the reason it is not available there, said as an error message. */
export function desktopOnly(why: string, run: () => void): () => void {
  return () => {
    if (onServer()) useMessages.getState().error(why, "NOT_ON_SERVER");
    else run();
  };
}
