// Messages over the canvas: information fades by itself, errors stay (in red) until dismissed.
import { useMessages } from "../store/messages";

export function Toasts() {
  const messages = useMessages((s) => s.messages);
  const dismiss = useMessages((s) => s.dismiss);
  if (!messages.length) return null;
  return (
    <div className="toasts" aria-live="polite">
      {messages.map((m) => (
        <div key={m.id} className={`toast ${m.kind}`} role={m.kind === "error" ? "alert" : "status"} data-testid={m.kind === "error" ? "message-error" : "message"}>
          <span className="toast-icon" aria-hidden>{m.kind === "error" ? "⚠" : "✓"}</span>
          <span className="toast-text">{m.text}</span>
          <button className="toast-close" onClick={() => dismiss(m.id)} aria-label="dismiss" title="Dismiss">×</button>
        </div>
      ))}
    </div>
  );
}
