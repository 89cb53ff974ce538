// Messages shown over the canvas. Information fades by itself after a few seconds; errors stay longer (a person may be
// looking elsewhere when one arrives, and the pointer resting on one keeps it), then fade too. A message said again
// while it is shown stays where it is: it does not go away and come back.
import { create } from "zustand";
import { baseName } from "../model/paths";
import { inAppWords } from "../model/words";

export type MessageKind = "info" | "error";
/** `code`: the stable code of an error, shown small beside the sentence. */
export type Message = { id: number; kind: MessageKind; text: string; code?: string };

/** How long an information message stays, in milliseconds. */
export const INFO_MS = 4000;
/** How long an error stays, in milliseconds, unless the pointer rests on it (or it is closed first). */
export const ERROR_MS = 12000;
const MAX_SHOWN = 3;

type MessagesState = {
  messages: Message[];
  info: (text: string) => void;
  error: (text: string, code?: string) => void;
  dismiss: (id: number) => void;
};

let next = 1;

export const useMessages = create<MessagesState>((set, get) => {
  const push = (kind: MessageKind, text: string, code?: string) => {
    // Already shown: it stays as it is, rather than going away and coming back.
    if (get().messages.some((m) => m.kind === kind && m.text === text)) return;
    const id = next++;
    set((s) => ({ messages: [...s.messages.filter((m) => m.text !== text), { id, kind, text, code }].slice(-MAX_SHOWN) }));
    if (kind === "info") setTimeout(() => get().dismiss(id), INFO_MS);
  };
  return {
    messages: [],
    info: (text) => push("info", text),
    error: (text, code) => push("error", text, code),
    dismiss: (id) => set((s) => ({ messages: s.messages.filter((m) => m.id !== id) })),
  };
});

/** The text of a thrown value: an Error's message, a command error's `message`, or the value itself. */
export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (e && typeof e === "object" && "message" in e) return String((e as { message: unknown }).message);
  return String(e);
}

/** A thrown command error's code, when it has one (`{code, message}`). */
export function errorCode(e: unknown): string | undefined {
  if (e && typeof e === "object" && "code" in e && typeof (e as { code: unknown }).code === "string") return (e as { code: string }).code;
  return undefined;
}

/**
 * Shows an error from a command, in the app's words, with its code small beside it. `file`: the file it concerns,
 * named once — by the message when the message already names it, else by the prefix.
 */
export function failWith(prefix: string, e: unknown, file?: string): void {
  const message = errorText(e);
  const code = errorCode(e);
  const lead = file && !message.includes(file) && !message.includes(baseName(file)) ? `${prefix} ${baseName(file)}` : prefix;
  useMessages.getState().error(`${lead}: ${inAppWords(message, code)}`, code);
}
