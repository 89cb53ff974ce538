// Two outputs of a node side by side, with what differs marked on each side: words for text of ordinary length, lines
// for long text (jsdiff does the diffing).
import { diffLines, diffWordsWithSpace, type ChangeObject } from "diff";

/** A stretch of one side's text: the same on both sides, or only on this one. */
export type Piece = { text: string; changed: boolean };

/** Above this many characters, outputs are compared line by line: a word diff of long text is slow and hard to read. */
const WORDS_UP_TO = 4000;

/** Each side's text in pieces: `before` marks what was removed, `after` what was added. */
export function outputDiff(before: string, after: string): { before: Piece[]; after: Piece[] } {
  const changes: ChangeObject<string>[] = before.length + after.length > 2 * WORDS_UP_TO ? diffLines(before, after) : diffWordsWithSpace(before, after);
  const left: Piece[] = [];
  const right: Piece[] = [];
  for (const c of changes) {
    if (!c.added) push(left, { text: c.value, changed: c.removed });
    if (!c.removed) push(right, { text: c.value, changed: c.added });
  }
  return { before: left, after: right };
}

/** Appends a piece, joining it to the last when both are the same kind. */
function push(pieces: Piece[], piece: Piece) {
  const last = pieces[pieces.length - 1];
  if (last && last.changed === piece.changed) last.text += piece.text;
  else if (piece.text) pieces.push(piece);
}
