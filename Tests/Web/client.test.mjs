// web/client.js: RewindClient directly — the push table, the document kept in
// step, the requests.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { PUSH_HANDLERS, pushNames, RewindClient } from "../../web/client.js";
import { oneText, scriptedSockets, wait } from "./fake-socket.mjs";

test("PUSH_HANDLERS: one key a line, readable from the source with a simple pattern", () => {
  const source = readFileSync(new URL("../../web/pushes.js", import.meta.url), "utf8");
  const table = source.match(/^export const PUSH_HANDLERS = \{\n([\s\S]*?)^\};/m)[1];
  // `name(` or `name:` after the indentation, no space between (the handlers' bodies start lines with `if (`, `for (`).
  const keys = [...table.matchAll(/^\s+([a-z_]+)[(:]/gm)].map((m) => m[1]);
  assert.deepEqual(keys, Object.keys(PUSH_HANDLERS));
  assert.deepEqual(pushNames, ["events", "presence", "prompt", "dismiss", "prompt_state", "shortcuts", "closed", "token_expiring", "renamed", "bye"]);
});

async function opened(reply = () => null) {
  const { FakeSocket, sockets } = scriptedSockets((m, s) => {
    if (m.type === "hello") return { user: "alice", client: m.client, shortcuts: [{ type: "new_document" }] };
    if (m.type === "open") return { doc: m.doc, version: 1, state: oneText("hi") };
    return reply(m, s);
  });
  const r = new RewindClient({ url: "ws://x/ws", user: "alice", token: "t", client: "c1", WebSocketImpl: FakeSocket });
  const changes = [], pushes = [];
  r.addEventListener("change", (e) => changes.push(e.detail));
  r.addEventListener("push", (e) => pushes.push(e.detail.push));
  await r.start();
  await r.open("d");
  return { r, socket: sockets[0], sockets, changes, pushes };
}

test("each push does what its handler says, and reaches push listeners first", async () => {
  const { r, socket, changes, pushes } = await opened();
  assert.deepEqual(r.shortcuts, [{ type: "new_document" }], "from hello");
  const seen = (push) => { changes.length = 0; socket.push(push); return [...changes]; };
  assert.deepEqual(seen({ push: "presence", doc: "d", client: "c2", user: "bob", node: "t" }), ["presence"]);
  assert.equal(r.presence.get("c2").user, "bob");
  assert.deepEqual(seen({ push: "presence", doc: "d", client: "c1", node: "t" }), [], "this terminal's own presence is not others'");
  seen({ push: "presence", doc: "d", client: "c2", node: null });
  assert.equal(r.presence.size, 0);
  seen({ push: "prompt", doc: "d", prompt: { id: "p1", title: "A" } });
  seen({ push: "prompt", doc: "d", prompt: { id: "p1", title: "B" } });
  assert.deepEqual(r.prompts, [{ id: "p1", title: "B", doc: "d" }], "the same id replaced");
  assert.deepEqual(seen({ push: "dismiss", prompt: "p1" }), ["prompts"]);
  assert.deepEqual(r.prompts, []);
  assert.deepEqual(seen({ push: "prompt_state", doc: "other", can_undo: true }), []);
  assert.deepEqual(seen({ push: "prompt_state", doc: "d", can_undo: true }), ["promptState"]);
  assert.deepEqual(seen({ push: "shortcuts", items: [] }), ["shortcuts"]);
  assert.deepEqual(seen({ push: "events", doc: "d", events: [{ version: 2, user: "bob", client: "c2", tx: "x", ops: [{ op: "insert", node: "t", pos: 2, text: "!" }] }] }), ["document"]);
  assert.equal(r.document.view.text("t"), "hi!");
  assert.deepEqual(seen({ push: "something_new" }), [], "a push not in the table: listeners only");
  assert.deepEqual(seen({ push: "renamed", doc: "other", title: "X" }), [], "another document's title");
  assert.deepEqual(seen({ push: "renamed", doc: "d", title: "Plans" }), ["title"]);
  assert.equal(r.title, "Plans");
  assert.deepEqual(seen({ push: "closed", doc: "d", reason: "deleted" }), ["failed", "document"]);
  assert.equal(r.doc, null);
  assert.equal(r.lastError.code, "deleted");
  seen({ push: "bye", reason: "shutdown", retry: false });
  assert.equal(r.status, "closed");
  assert.equal(pushes.length, 15);
});

test("an event that does not apply reloads the document; unsent edits are said to be dropped", async () => {
  const { r, socket, sockets } = await opened();
  r.edit([{ op: "insert", node: "t", pos: 0, text: ">" }]);
  socket.push({ push: "events", doc: "d", events: [{ version: 2, user: "bob", client: "c2", tx: "x", ops: [{ op: "remove", node: "t", pos: 7, len: 1 }] }] });
  await wait(10);
  assert.equal(r.lastError.code, "conflict");
  assert.equal(sockets[0].sent.filter((m) => m.type === "open").length, 2);
  assert.equal(r.document.view.text("t"), "hi");
});

test("requests about the history wait for the edits before them; a refused submit drops what waits", async () => {
  const { r, socket } = await opened((m) => (m.type === "submit" ? null : {}));
  r.edit([{ op: "insert", node: "t", pos: 2, text: "!" }]);
  const undone = r.undo();
  await wait(5);
  assert.ok(!socket.sent.some((m) => m.type === "undo"), "not before the typing is committed");
  const submit = socket.sent.find((m) => m.type === "submit");
  socket.push({ push: "events", doc: "d", events: [{ version: 2, user: "alice", client: "c1", tx: submit.tx, ops: submit.ops }] });
  await undone;
  assert.deepEqual(socket.sent.at(-1), { id: socket.sent.at(-1).id, type: "undo", doc: "d" });
  r.edit([{ op: "insert", node: "t", pos: 0, text: "x" }]);
  const second = socket.sent.filter((m) => m.type === "submit")[1];
  socket.push({ re: second.id, ok: false, error: { code: "bad_request", message: "no" } });
  await wait(5);
  assert.ok(r.settled);
  assert.equal(r.document.view.text("t"), "hi!");
  assert.equal(r.lastError.code, "bad_request");
  await r.select("t", 1);
  assert.deepEqual(socket.sent.at(-1), { id: socket.sent.at(-1).id, type: "select", doc: "d", node: "t", start: 1, end: 1 });
  await r.shortcut({ type: "open_document" });
  assert.deepEqual(socket.sent.at(-1).shortcut, { type: "open_document", info: {} });
  r.stop();
});

test("the library's requests are the protocol's, the open document's where none is named; allDocuments walks the pages", async () => {
  const pages = { undefined: { docs: [{ doc: "a" }, { doc: "b" }], next: "2:b" }, "2:b": { docs: [{ doc: "c" }] } };
  const { r, socket } = await opened((m) => (m.type === "list_docs" ? pages[m.after] : {}));
  assert.deepEqual((await r.allDocuments()).map((d) => d.doc), ["a", "b", "c"]);
  await r.rename("Plans");
  await r.share("bob", "viewer");
  await r.documentInfo();
  await r.undeleteDocument("gone");
  await r.listDeleted();
  const sent = socket.sent.filter((m) => !["hello", "open", "ping"].includes(m.type)).map(({ id, ...m }) => m);
  assert.deepEqual(sent, [
    { type: "list_docs", limit: 200 }, { type: "list_docs", limit: 200, after: "2:b" },
    { type: "rename", doc: "d", title: "Plans" }, { type: "share", doc: "d", user: "bob", role: "viewer" },
    { type: "doc_info", doc: "d" }, { type: "undelete_doc", doc: "gone" }, { type: "list_deleted" },
  ]);
  r.closeDocument();
  assert.equal(r.doc, null);
  assert.deepEqual(socket.sent.at(-1).type, "close");
  r.stop();
});

test("closed moved: opened again with since (unavailable meanwhile, retried), and the edit in flight sent again with its tx", async () => {
  let sinceOpens = 0;
  const submits = [];
  const fail = (s, m) => setTimeout(() => s.push({ re: m.id, ok: false, error: { code: "unavailable", message: "moving", details: { moving: true } } }), 0);
  const { FakeSocket, sockets } = scriptedSockets((m, s) => {
    if (m.type === "hello") return { user: "alice", client: m.client, shortcuts: [] };
    if (m.type === "open" && m.since === undefined) return { doc: m.doc, version: 1, state: oneText("hi") };
    if (m.type === "open") { if (++sinceOpens === 1) return fail(s, m); return { doc: m.doc, version: 1, events: [] }; }
    if (m.type === "submit") { submits.push(m.tx); if (submits.length === 1) return fail(s, m); return { version: 2 }; }
    return null;
  });
  const r = new RewindClient({ url: "ws://x/ws", user: "alice", token: "t", client: "c1", WebSocketImpl: FakeSocket });
  await r.start();
  await r.open("d");
  r.edit([{ op: "set", node: "t", key: "k", value: 1 }]);
  await wait(5);
  sockets[0].push({ push: "closed", doc: "d", reason: "moved" });
  assert.equal(r.status, "reconnecting", "edits wait while it moves");
  await wait(400);
  assert.equal(sinceOpens, 2, "unavailable once, then opened");
  assert.equal(r.status, "ready");
  assert.equal(r.doc, "d", "still the open document");
  assert.equal(submits.length, 2);
  assert.equal(submits[1], submits[0], "the same tx again");
});
