// The generated bindings with errors turned into exceptions, so components read naturally.
import { commands } from "./bindings";

type Result<T, E> = { status: "ok"; data: T } | { status: "error"; error: E };

/** A command's value, or its `{code, message}` error thrown as an Error that keeps the code. */
export async function unwrap<T>(call: Promise<Result<T, { code: string; message: string }>>): Promise<T> {
  const r = await call;
  if (r.status === "error") {
    throw Object.assign(new Error(r.error.message), { code: r.error.code });
  }
  return r.data;
}

export { commands };
