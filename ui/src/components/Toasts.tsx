// Messages over the canvas, shown by sonner: information fades by itself, errors (in red) stay longer and fade too. The
// messages store stays the one place that decides what is said; this only shows it.
import { useEffect } from "react";
import { toast, Toaster } from "sonner";
import { ERROR_MS, INFO_MS, useMessages, type Message } from "../store/messages";
import { useLayoutPrefs } from "../store/layoutPrefs";
import { usePrefs } from "../store/prefs";
import { onReachability, onServer, watchServer } from "../transport";

/** In a browser: a message that stays while the server does not answer, and one that says when it is back. */
function useServerWatch() {
  useEffect(() => {
    if (!onServer()) return;
    const stop = watchServer();
    const off = onReachability((reachable) => {
      if (reachable) {
        toast.dismiss("server-unreachable");
        toast.success("The server answers again.", { id: "server-back", testId: "server-back", duration: 4000 });
      } else {
        toast.dismiss("server-back");
        toast.error("The server does not answer: is switchyard serve running? Trying again…", { id: "server-unreachable", testId: "server-unreachable", duration: Infinity });
      }
    });
    return () => (stop(), off());
  }, []);
}

function show(m: Message) {
  const body = (
    <span className="toast-text">
      {m.text}
      {m.code ? <code className="toast-code">{m.code}</code> : null}
    </span>
  );
  const options = {
    id: m.id,
    testId: m.kind === "error" ? "message-error" : "message",
    // sonner holds the timer while the pointer rests on a message, so an error being read stays.
    duration: m.kind === "error" ? ERROR_MS : INFO_MS,
    closeButton: true,
    onDismiss: () => useMessages.getState().dismiss(m.id),
    onAutoClose: () => useMessages.getState().dismiss(m.id),
  };
  if (m.kind === "error") toast.error(body, options);
  else toast.success(body, options);
}

export function Toasts() {
  useServerWatch();
  const theme = usePrefs((s) => s.theme);
  // Over the canvas's top right corner: below the toolbar and clear of the inspector, never over a control.
  const right = useLayoutPrefs((p) => p.inspectorPx) + 14;
  useEffect(() => {
    useMessages.getState().messages.forEach(show);
    return useMessages.subscribe((s, p) => {
      const before = new Set(p.messages.map((m) => m.id));
      const now = new Set(s.messages.map((m) => m.id));
      s.messages.filter((m) => !before.has(m.id)).forEach(show);
      p.messages.filter((m) => !now.has(m.id)).forEach((m) => toast.dismiss(m.id));
    });
  }, []);
  return <Toaster position="top-right" offset={{ top: 54, right }} theme={theme} richColors visibleToasts={3} className="toaster" toastOptions={{ className: "toast" }} />;
}
