// web/doc.js: the document model, directly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Doc, scalars } from "../../web/doc.js";

const create = (node, text = "", parent = "root", extra = {}) => ({ op: "create", node, parent, kind: "text", frame: [0, 0, 9, 9], text, ...extra });

test("scalars counts code points, not UTF-16 units", () => {
  assert.deepEqual(scalars("a😀é"), ["a", "😀", "é"]);
  assert.deepEqual(scalars(undefined), []);
});

test("a new Doc has only the root; nodes start plain", () => {
  const d = new Doc();
  assert.deepEqual([...d.nodes.keys()], ["root"]);
  d.applyAll([create("t", "x", "root", { clips: 1, props: { color: "red", gone: null } })]);
  const t = d.get("t");
  assert.equal(t.clips, true);
  assert.equal(t.focusable, false);
  assert.deepEqual(t.props, { color: "red" }, "a null prop is not set");
  assert.equal(d.text("nope"), "");
});

test("set: frame and flags apart from props; null removes a prop", () => {
  const d = new Doc();
  d.applyAll([create("t"), { op: "set", node: "t", key: "frame", value: [1, 2, 3, 4] }, { op: "set", node: "t", key: "undoScope", value: 1 },
              { op: "set", node: "t", key: "k", value: "v" }]);
  assert.deepEqual(d.get("t").frame, [1, 2, 3, 4]);
  assert.equal(d.get("t").undoScope, true);
  d.applyAll([{ op: "set", node: "t", key: "k", value: null }]);
  assert.deepEqual(d.get("t").props, {});
});

test("ops that do not apply throw, and applyAll changes nothing", () => {
  const d = new Doc();
  d.applyAll([create("a"), create("b", "", "a")]);
  const before = JSON.stringify(d.toState());
  for (const [op, message] of [
    [create("a"), /already exists/], [create("x", "", "none"), /does not exist/], [{ op: "delete", node: "root" }, /root/],
    [{ op: "move", node: "a", parent: "b" }, /own subtree/], [{ op: "move", node: "root", parent: "a" }, /root/],
    [{ op: "insert", node: "a", pos: 3, text: "x" }, /out of range/], [{ op: "remove", node: "a", pos: 1, len: 2 }, /out of range/],
    [{ op: "frobnicate", node: "a" }, /unknown op/],
  ]) {
    assert.throws(() => d.applyAll([{ op: "insert", node: "a", pos: 0, text: "ok" }, op]), message, JSON.stringify(op));
    assert.equal(JSON.stringify(d.toState()), before, "all or nothing: " + op.op);
  }
});

test("clone is deep: changing it leaves the original", () => {
  const d = new Doc();
  d.applyAll([create("t", "hi")]);
  const c = d.clone();
  c.applyAll([{ op: "insert", node: "t", pos: 2, text: "!" }, { op: "set", node: "t", key: "frame", value: [5, 5, 5, 5] }]);
  assert.equal(d.text("t"), "hi");
  assert.deepEqual(d.get("t").frame, [0, 0, 9, 9]);
});

test("toState orders ids as the server does: by their UTF-8 bytes", () => {
  const d = new Doc();
  d.applyAll([create("é"), create("z"), create("Z"), create("a")]);
  assert.deepEqual(Object.keys(d.toState().nodes), ["Z", "a", "root", "z", "é"]);
  const back = Doc.fromState(d.toState());
  assert.deepEqual(back.toState(), d.toState());
  assert.ok(back.isInSubtree("a", "root"));
  assert.ok(!back.isInSubtree("root", "a"));
});
