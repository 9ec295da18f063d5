// transform.js — the text transform: TextTransform.swift, op for op. `b` was
// committed first and has priority.

import { scalars } from "./doc.js";

const isText = (op) => op.op === "insert" || op.op === "remove";
/** A text's length in code points. */
export const count = (text) => scalars(text).length;

/** Position `x` after removing `len` code points at `at` (one inside the removed range goes to its start). */
export function mapThroughRemove(x, at, len) {
  if (x <= at) return x;
  if (x >= at + len) return x - len;
  return at;
}

function removeAroundInsert(node, p, l, q, n) {
  if (q <= p) return [{ op: "remove", node, pos: p + n, len: l }];
  if (q >= p + l) return [{ op: "remove", node, pos: p, len: l }];
  return [{ op: "remove", node, pos: p, len: q - p }, { op: "remove", node, pos: p + n, len: l - (q - p) }];
}

function removeMinus(node, p, l1, q, l2) {
  const start = mapThroughRemove(p, q, l2), end = mapThroughRemove(p + l1, q, l2);
  return end > start ? [{ op: "remove", node, pos: start, len: end - start }] : [];
}

/** One op against one op: `[a after b, b after a]`. */
export function pair(a, b) {
  if (a.node !== b.node || !isText(a) || !isText(b)) return [[a], [b]];
  const node = a.node;
  if (a.op === "insert" && b.op === "insert") {
    const p = a.pos, q = b.pos;
    const a2 = q <= p ? { ...a, pos: p + count(b.text) } : a;
    const b2 = p < q ? { ...b, pos: q + count(a.text) } : b;
    return [[a2], [b2]];
  }
  if (a.op === "insert" && b.op === "remove") {
    return [[{ ...a, pos: mapThroughRemove(a.pos, b.pos, b.len) }], removeAroundInsert(node, b.pos, b.len, a.pos, count(a.text))];
  }
  if (a.op === "remove" && b.op === "insert") {
    return [removeAroundInsert(node, a.pos, a.len, b.pos, count(b.text)), [{ ...b, pos: mapThroughRemove(b.pos, a.pos, a.len) }]];
  }
  return [removeMinus(node, a.pos, a.len, b.pos, b.len), removeMinus(node, b.pos, b.len, a.pos, a.len)];
}

/** `a` (not yet applied) against `b` (applied first): `[a after b, b after a]`. */
export function transform(a, b) {
  if (a.length === 0 || b.length === 0) return [a, b];
  if (a.length === 1 && b.length === 1) return pair(a[0], b[0]);
  let through = b;
  const out = [];
  for (const x of a) {
    let xs = [x];
    const next = [];
    for (const y of through) {
      let ys = [y];
      if (xs.length) [xs, ys] = transform(xs, ys);
      next.push(...ys);
    }
    out.push(...xs);
    through = next;
  }
  return [out, through];
}
