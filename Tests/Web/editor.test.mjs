// The web editor's modules (web/editor-*.js), each imported directly: their
// logic without a browser, and a little of their drawing against a stand-in
// for `document` (the whole page runs in Tests/Browser/test_editor.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Doc } from "../../web/doc.js";
import { diffOps, shapeOf, toPoints, toUnits } from "../../web/editor-text.js";
import { caretMarks, colorOf, peersIn } from "../../web/editor-presence.js";
import { alertOrder, promptToShow, renderPromptState, undoRedoButtons } from "../../web/editor-prompts.js";
import { peekActions, peekText, shortcutCard } from "../../web/editor-start.js";
import { keyCommand, shakeDetector } from "../../web/editor-keys.js";
import { progressOf, scrubLabel } from "../../web/editor-history.js";
import { newNodeOp } from "../../web/editor-nodes.js";
import { changed, statusText } from "../../web/editor-status.js";
import { params } from "../../web/editor-signin.js";
import { act, page } from "../../web/editor-page.js";
import { openDocument, render } from "../../web/editor-document.js";

/** A stand-in for `document` with elements by id: textContent, disabled, className, classList. */
function fakeDocument(ids, hidden = []) {
  const els = {};
  for (const id of ids) {
    const classes = new Set(hidden.includes(id) ? ["hidden"] : []);
    els[id] = { id, textContent: "", disabled: false, className: "", classList: {
      contains: (c) => classes.has(c), add: (c) => classes.add(c), remove: (c) => classes.delete(c) } };
  }
  globalThis.document = { getElementById: (id) => els[id] };
  return els;
}

test("editor-text: code points ↔ UTF-16 units; a text box's change as ops; the tree's shape", () => {
  assert.equal(toUnits("a😀b", 2), 3);
  assert.equal(toPoints("a😀b", 3), 2);
  assert.deepEqual(diffOps("t", "hello", "hello"), []);
  assert.deepEqual(diffOps("t", "hello", "help!lo"), [{ op: "insert", node: "t", pos: 3, text: "p!" }]);
  assert.deepEqual(diffOps("t", "a😀b", "ab"), [{ op: "remove", node: "t", pos: 1, len: 1 }]);
  assert.deepEqual(diffOps("t", "abcd", "aXd"), [{ op: "remove", node: "t", pos: 1, len: 2 }, { op: "insert", node: "t", pos: 1, text: "X" }]);
  const d = new Doc();
  d.applyAll([{ op: "create", node: "t", parent: "root", kind: "text", frame: [0, 0, 9, 9], text: "x" }]);
  const shape = shapeOf(d, false);
  d.applyAll([{ op: "insert", node: "t", pos: 0, text: "more" }]);
  assert.equal(shapeOf(d, false), shape, "text is not shape");
  assert.notEqual(shapeOf(d, true), shape, "scrubbing is");
  d.applyAll([{ op: "set", node: "t", key: "frame", value: [1, 0, 9, 9] }]);
  assert.notEqual(shapeOf(d, false), shape, "a frame is");
});

test("editor-presence: others' carets in order, clamped; who is in a node", () => {
  const presence = new Map([["c2", { user: "bob", node: "t", selection: { start: 9, end: 12 } }], ["c3", { user: "carol", node: "t", selection: { start: 1, end: 1 } }],
                            ["c4", { user: "dave", node: "u", selection: { start: 0, end: 0 } }], ["c5", { user: "eve", node: "t" }]]);
  assert.deepEqual(caretMarks(presence, "t", 5), [{ at: 1, end: 1, name: "carol", color: colorOf("carol") }, { at: 5, end: 5, name: "bob", color: colorOf("bob") }]);
  assert.deepEqual(peersIn(presence, "t"), { names: "bob, carol, eve", color: colorOf("bob") });
  assert.equal(peersIn(presence, "none"), null);
  assert.equal(colorOf("bob"), colorOf("bob"));
});

test("editor-prompts: Undo and Redo titled from prompt_state; the alert shown and its actions' order", () => {
  assert.deepEqual(undoRedoButtons(null, false), { undo: { disabled: true, text: "Undo" }, redo: { disabled: true, text: "Redo" } });
  const ps = { can_undo: true, undo_title: "Undo Typing", can_redo: false };
  assert.deepEqual(undoRedoButtons(ps, false).undo, { disabled: false, text: "Undo Typing" });
  assert.equal(undoRedoButtons(ps, true).undo.disabled, true, "not while scrubbing");
  assert.equal(promptToShow([{ id: 1, level: "alert" }, { id: 2, level: "sheet" }]).id, 1);
  assert.equal(promptToShow([{ id: 1 }, { id: 2 }]).id, 2);
  assert.equal(promptToShow([]), undefined);
  assert.deepEqual(alertOrder([{ id: "c", style: "cancel" }, { id: "u" }, { id: "d", style: "destructive" }]).map((a) => a.id), ["u", "d", "c"]);
  const els = fakeDocument(["undo", "redo"]);
  page.client = { promptState: ps };
  page.scrub = null;
  renderPromptState();
  assert.deepEqual([els.undo.textContent, els.undo.disabled, els.redo.textContent, els.redo.disabled], ["Undo Typing", false, "Redo", true]);
});

test("editor-start: quick actions' cards, the peek's text and actions", () => {
  assert.deepEqual(shortcutCard({ type: "new_document", icon: "compose", title: "New Document" }), { icon: "✎", title: "New Document", subtitle: "" });
  assert.deepEqual(shortcutCard({ type: "open_document", title: "notes", subtitle: "bob" }).subtitle, "last edited by bob");
  assert.deepEqual(shortcutCard({ type: "open_document", title: "notes" }), { icon: "▤", title: "notes", subtitle: "document" });
  const d = new Doc();
  d.applyAll([{ op: "create", node: "t", parent: "root", kind: "text", frame: [0, 0, 1, 1], text: "hello" }, { op: "create", node: "v", parent: "root", kind: "view", frame: [0, 0, 1, 1] }]);
  assert.equal(peekText("notes", { version: 3, state: d.toState() }), "notes · version 3\n\nhello");
  assert.equal(peekText("empty", { version: 0, state: new Doc().toState() }), "empty · version 0\n\n(no text)");
  assert.deepEqual(peekActions([{ id: "open" }, { id: "share", actions: [] }, { id: "delete" }]).map((a) => a.id), ["delete"]);
});

test("editor-keys: what a key asks for; two strong jolts within half a second are a shake", () => {
  const key = (k, mods = {}) => keyCommand({ key: k, code: "Key" + k.toUpperCase(), ctrlKey: false, metaKey: false, altKey: false, shiftKey: false, ...mods });
  assert.equal(key("z", { ctrlKey: true }), "undo");
  assert.equal(key("Z", { metaKey: true, shiftKey: true }), "redo");
  assert.equal(key("y", { ctrlKey: true }), "redo");
  assert.equal(key("Ž", { altKey: true, shiftKey: true, code: "KeyZ" }), "shake", "by the key's place, whatever Alt makes of it");
  assert.equal(key("z", { ctrlKey: true, altKey: true }), null);
  assert.equal(keyCommand({ key: "Escape", code: "Escape" }), "escape");
  assert.equal(key("a"), null);
  const shaken = shakeDetector();
  const jolt = { x: 30, y: 0, z: 0 }, still = { x: 1, y: 9.8, z: 0 };
  assert.deepEqual([shaken(jolt, 0), shaken(still, 100), shaken(jolt, 600), shaken(jolt, 900), shaken(jolt, 1000)], [false, false, false, true, false]);
});

test("editor-history, editor-nodes, editor-status, editor-signin: their small logic", () => {
  assert.equal(progressOf("25"), 0.25);
  assert.equal(scrubLabel(0, 7), "0 of 7 (before the first edit)");
  assert.equal(scrubLabel(3, 7), "3 of 7");
  assert.equal(scrubLabel(7, 7), "7 of 7 (now)");
  const v = new Doc();
  assert.deepEqual(newNodeOp(v, "text", "web-abcdefgh", 1), { op: "create", node: "text-cdefgh-1", parent: "root", kind: "text", frame: [20, 20, 460, 90], focusable: true, text: "" });
  v.applyAll([{ op: "create", node: "a", parent: "root", kind: "view", frame: [0, 100, 10, "50"] }]);
  assert.deepEqual(newNodeOp(v, "view", "c", 2).frame, [20, 174, 300, 120], "below the root's children");
  assert.equal(statusText("ready", 1), "connected");
  assert.equal(statusText("reconnecting", 0), "reconnecting…");
  assert.equal(statusText("offline", 1), "offline — 1 change waiting to be sent, kept on this device");
  assert.equal(statusText("reconnecting", 3), "reconnecting… — 3 changes waiting to be sent, kept on this device");
  assert.equal(statusText("closed", 1), "closed");
  assert.deepEqual(params("#user=alice&token=a%2Bb&doc=d"), { user: "alice", token: "a+b", doc: "d" });
  assert.deepEqual(params(""), {});
});

test("editor-page and editor-status: a request's error on the error line; change events redraw what they name", async () => {
  const els = fakeDocument(["error", "status", "start", "editor"], ["start", "editor"]);
  await act(async () => { throw new Error("refused"); });
  assert.equal(els.error.textContent, "refused");
  await act(async () => {});
  assert.equal(els.error.textContent, "", "cleared by the next");
  page.client = { status: "offline", loaded: true, document: { inFlight: { tx: "a" }, buffered: [[{ op: "x" }], []] }, lastError: new Error("gone") };
  changed("status");
  assert.deepEqual([els.status.className, els.status.textContent], ["offline", "offline — 2 changes waiting to be sent, kept on this device"]);
  changed("document");   // the editor hidden: nothing drawn (render would need the canvas)
  changed("shortcuts");  // the start screen hidden: nothing drawn
  changed("failed");
  assert.equal(els.error.textContent, "gone");
  assert.equal(typeof openDocument, "function");
  assert.equal(typeof render, "function");
  delete globalThis.document;
});
