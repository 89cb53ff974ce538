// File paths as the app names them to the person.

/** A path's file name. */
export const baseName = (path: string) => path.split("/").pop() ?? path;
