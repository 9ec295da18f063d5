// web/local-document.js: this terminal's copy, directly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { LocalDocument } from "../../web/local-document.js";
import { Doc } from "../../web/doc.js";

function copyOf(text) {
  const l = new LocalDocument();
  const d = new Doc();
  d.applyAll([{ op: "create", node: "t", parent: "root", kind: "text", frame: [0, 0, 9, 9], text }]);
  l.reset(d, 1);
  return l;
}

test("edits join the last segment unless a new one is asked for; an empty segment is not sent", () => {
  const l = copyOf("ab");
  l.edit([{ op: "insert", node: "t", pos: 2, text: "c" }]);
  l.edit([{ op: "insert", node: "t", pos: 3, text: "d" }]);
  l.edit([{ op: "insert", node: "t", pos: 0, text: ">" }], true);
  assert.equal(l.buffered.length, 2);
  assert.equal(l.view.text("t"), ">abcd");
  assert.equal(l.nextSubmit("x-1").ops.length, 2);
  assert.throws(() => l.edit([{ op: "insert", node: "t", pos: 99, text: "!" }]));
  assert.equal(l.view.text("t"), ">abcd", "an edit that does not apply changes nothing");
  const empty = copyOf("");
  empty.buffered.push([]);
  assert.equal(empty.nextSubmit("e-1"), null);
});

test("events: duplicates, gaps and ops that do not apply are told apart", () => {
  const l = copyOf("ab");
  assert.equal(l.apply({ version: 1, ops: [], tx: "t", own: false }), "duplicate");
  assert.equal(l.apply({ version: 3, ops: [], tx: "t", own: false }), "gap");
  assert.equal(l.apply({ version: 2, ops: [{ op: "remove", node: "t", pos: 5, len: 1 }], tx: "t", own: false }), "diverged");
  assert.equal(l.version, 1);
});

test("the selection moves through others' edits and is clamped to the text", () => {
  const l = copyOf("hello");
  l.selection = { node: "t", start: 2, end: 4 };
  l.apply({ version: 2, ops: [{ op: "insert", node: "t", pos: 0, text: "😀😀" }], tx: "o", own: false });
  assert.deepEqual(l.selection, { node: "t", start: 4, end: 6 });
  l.apply({ version: 3, ops: [{ op: "remove", node: "t", pos: 0, len: 5 }], tx: "o", own: false });
  assert.deepEqual(l.selection, { node: "t", start: 0, end: 1 });
  l.selection = { node: "t", start: 9, end: 3 };
  l.clampSelection();
  assert.deepEqual(l.selection, { node: "t", start: 2, end: 2 });
  l.apply({ version: 4, ops: [{ op: "delete", node: "t" }], tx: "o", own: false });
  assert.equal(l.selection, null, "its node gone");
});

test("a pending edit whose node someone deleted is dropped from the view; dropPending forgets all", () => {
  const l = copyOf("ab");
  l.edit([{ op: "insert", node: "t", pos: 0, text: "x" }]);
  l.nextSubmit("a-1");
  l.edit([{ op: "insert", node: "t", pos: 0, text: "y" }]);
  assert.equal(l.apply({ version: 2, ops: [{ op: "delete", node: "t" }], tx: "b-1", own: false }), "applied");
  assert.equal(l.view.get("t"), undefined);
  assert.ok(!l.isSettled);
  l.dropPending();
  assert.ok(l.isSettled);
});
