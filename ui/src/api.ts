// The generated bindings with errors turned into exceptions, so components read naturally.
import { commands } from "./bindings";

type Result<T, E> = { status: "ok"; data: T } | { status: "error"; error: E };

export async function unwrap<T>(call: Promise<Result<T, string>>): Promise<T> {
  const r = await call;
  if (r.status === "error") throw new Error(r.error);
  return r.data;
}

export { commands };
