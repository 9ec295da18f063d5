// web/transform.js: the text transform, directly (the Swift one's agreement is
// BrowserClientAgreementTests' and agreement.mjs's).
import { test } from "node:test";
import assert from "node:assert/strict";
import { count, mapThroughRemove, pair, transform } from "../../web/transform.js";
import { Doc } from "../../web/doc.js";

const ins = (pos, text, node = "t") => ({ op: "insert", node, pos, text });
const rem = (pos, len, node = "t") => ({ op: "remove", node, pos, len });

test("helpers: lengths in code points; positions through a remove", () => {
  assert.equal(count("😀a"), 2);
  assert.deepEqual([1, 2, 3, 5, 6, 8].map((x) => mapThroughRemove(x, 2, 4)), [1, 2, 2, 2, 2, 4]);
});

test("pair: different nodes or non-text ops pass each other unchanged", () => {
  assert.deepEqual(pair(ins(0, "a", "x"), ins(0, "b", "y")), [[ins(0, "a", "x")], [ins(0, "b", "y")]]);
  const set = { op: "set", node: "t", key: "k", value: 1 };
  assert.deepEqual(pair(set, ins(0, "b")), [[set], [ins(0, "b")]]);
});

test("pair: an insert inside a remove splits the remove around it", () => {
  // "abcdef": remove "bcde", insert "XY" before "d": "aXYf" either way; the remove's parts apply in order.
  assert.deepEqual(pair(ins(3, "XY"), rem(1, 4)), [[ins(1, "XY")], [rem(1, 2), rem(3, 2)]]);
  assert.deepEqual(pair(rem(1, 4), ins(3, "XY")), [[rem(1, 2), rem(3, 2)], [ins(1, "XY")]]);
});

test("pair: overlapping removes remove the rest once", () => {
  assert.deepEqual(pair(rem(0, 4), rem(2, 4)), [[rem(0, 2)], [rem(0, 2)]]);
  assert.deepEqual(pair(rem(1, 2), rem(0, 5)), [[], [rem(0, 3)]]);
});

test("transform: lists converge whichever applies first", () => {
  const a = [ins(1, "ab"), rem(0, 1)], b = [rem(2, 2), ins(0, "😀")];
  const [a2, b2] = transform(a, b);
  const start = () => { const d = new Doc(); d.applyAll([{ op: "create", node: "t", parent: "root", kind: "text", frame: [0, 0, 1, 1], text: "hello" }]); return d; };
  const one = start(), two = start();
  one.applyAll([...b, ...a2]);
  two.applyAll([...a, ...b2]);
  assert.equal(one.text("t"), two.text("t"));
  assert.deepEqual(transform([], b), [[], b]);
});
