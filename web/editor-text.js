// editor-text.js — text as the protocol counts it (code points) and as a
// textarea does (UTF-16 units); a textarea's change as ops; the tree's shape.
// No DOM: tested under node.

import { scalars } from "./rewind.js";

/** Code-point offset ↔ UTF-16 offset in a string. */
export const toUnits = (text, cp) => scalars(text).slice(0, cp).join("").length;
export const toPoints = (text, units) => scalars(text.slice(0, units)).length;

/** The difference between what a text box showed and what it holds: a remove and an insert (code points), either or both, or none. */
export function diffOps(node, shown, value) {
  const before = scalars(shown), after = scalars(value);
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let endB = before.length, endA = after.length;
  while (endB > start && endA > start && before[endB - 1] === after[endA - 1]) { endB--; endA--; }
  const ops = [];
  if (endB > start) ops.push({ op: "remove", node, pos: start, len: endB - start });
  if (endA > start) ops.push({ op: "insert", node, pos: start, text: after.slice(start, endA).join("") });
  return ops;
}

/** The tree's shape: ids, parents, kinds, frames. While it stays the same, a redraw only updates texts and presence. */
export function shapeOf(doc, scrubbing) {
  let key = scrubbing ? "scrub:" : "live:";
  for (const [id, n] of doc.nodes) key += id + "\u0000" + n.parent + "\u0000" + n.kind + "\u0000" + n.frame.join(",") + "\u0000" + n.children.join(",") + "\u0000" + (n.props?.title ?? "") + "\u0001";
  return key;
}
