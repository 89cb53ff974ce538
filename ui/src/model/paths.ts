// File paths as the app names them to the person.

/** A path's file name. */
export const baseName = (path: string) => path.split("/").pop() ?? path;

/**
 * Where a `workflow` node's child file is: `written` relative to the folder of `parent` (the parent's own file), as
 * the engine finds it (`validate::workflows::child_path`), with `.` and `..` segments resolved.
 */
export function childPath(parent: string, written: string): string {
  if (written.startsWith("/")) return written;
  const segments = parent.split("/").slice(0, -1);
  for (const part of written.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === ".." && segments.length > 1) segments.pop();
    else if (part !== "..") segments.push(part);
  }
  return segments.join("/") || "/";
}
