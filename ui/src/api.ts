// The generated bindings with errors turned into exceptions, so components read naturally.
import { commands } from "./bindings";

type Result<T, E> = { status: "ok"; data: T } | { status: "error"; error: E };

/** A command's value, or its error thrown: a message, or `{code, message}` (the code kept on the Error). */
export async function unwrap<T>(call: Promise<Result<T, string | { code: string; message: string }>>): Promise<T> {
  const r = await call;
  if (r.status === "error") {
    if (typeof r.error === "string") throw new Error(r.error);
    throw Object.assign(new Error(r.error.message), { code: r.error.code });
  }
  return r.data;
}

export { commands };
