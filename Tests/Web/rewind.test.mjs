// node --test Tests/Web/: rewind.js, the entry point apps import, without a
// browser — the document model, the local copy, and the client's reconnect logic
// against a scripted socket. Each module has its own file too (doc.test.mjs, …).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Doc, LocalDocument, RewindClient, transform } from "../../web/rewind.js";
import { scriptedSockets, wait } from "./fake-socket.mjs";

const create = (node, text = "", parent = "root") => ({ op: "create", node, parent, kind: "text", frame: [0, 0, 9, 9], text });

test("ops apply as the server applies them, positions in code points", () => {
  const d = new Doc();
  d.applyAll([create("t", "a😀b"), { op: "insert", node: "t", pos: 2, text: "é" }, { op: "remove", node: "t", pos: 0, len: 1 }]);
  assert.equal(d.text("t"), "😀éb");
  d.applyAll([{ op: "create", node: "v", parent: "root", index: 0, kind: "view", frame: [1, 2, 3, 4], children: [{ node: "c", kind: "text", text: "x" }] }]);
  assert.deepEqual(d.get("root").children, ["v", "t"]);
  d.applyAll([{ op: "move", node: "t", parent: "v", index: 99 }, { op: "set", node: "t", key: "color", value: "red" }]);
  assert.deepEqual(d.get("v").children, ["c", "t"]);
  assert.equal(d.get("t").props.color, "red");
  assert.throws(() => d.applyAll([{ op: "insert", node: "t", pos: 1, text: "!" }, { op: "remove", node: "t", pos: 9, len: 1 }]));
  assert.equal(d.text("t"), "😀éb", "all or nothing");
  d.applyAll([{ op: "delete", node: "v" }]);
  assert.equal(d.get("c"), undefined);
  assert.deepEqual(Doc.fromState(d.toState()).toState(), d.toState());
});

test("an insert at the same place goes after the one committed first", () => {
  const [a] = transform([{ op: "insert", node: "t", pos: 2, text: "B" }], [{ op: "insert", node: "t", pos: 2, text: "A" }]);
  assert.deepEqual(a, [{ op: "insert", node: "t", pos: 3, text: "B" }]);
});

test("edits wait behind the submit in flight and move through others' events", () => {
  const l = new LocalDocument();
  const base = new Doc();
  base.applyAll([create("t", "hello")]);
  l.reset(base, 1);
  l.edit([{ op: "insert", node: "t", pos: 5, text: "!" }]);
  const first = l.nextSubmit("a-1");
  assert.equal(first.base, 1);
  l.edit([{ op: "insert", node: "t", pos: 0, text: ">" }]);
  assert.equal(l.nextSubmit("a-2"), null, "one in flight");
  assert.equal(l.apply({ version: 2, ops: [{ op: "insert", node: "t", pos: 0, text: "oh " }], tx: "b-1", own: false }), "applied");
  assert.equal(l.view.text("t"), "oh >hello!", "their insert, committed first, goes first");
  assert.equal(l.apply({ version: 3, ops: first.current, tx: "a-1", own: true }), "own");
  assert.equal(l.apply({ version: 5, ops: [], tx: "x", own: false }), "gap");
  const second = l.nextSubmit("a-2");
  assert.deepEqual(second.ops, [{ op: "insert", node: "t", pos: 3, text: ">" }], "moved through their text");
  assert.equal(l.apply({ version: 4, ops: second.ops, tx: "a-2", own: true }), "own");
  assert.equal(l.confirmed.text("t"), "oh >hello!");
  assert.ok(l.isSettled);
});


test("after a reconnect, the submit in flight is sent again with the same tx, after catching up", async () => {
  let committed = false;
  const state = { nodes: { root: { parent: null, children: ["t"], kind: "root", frame: [0, 0, 0, 0], props: {}, text: "" },
                           t: { parent: "root", children: [], kind: "text", frame: [0, 0, 9, 9], props: {}, text: "hi" } } };
  const { FakeSocket, sockets } = scriptedSockets((m) => {
    if (m.type === "hello") return { user: "alice", client: m.client, shortcuts: [] };
    if (m.type === "open" && m.since === undefined) return { doc: "d", version: 1, state };
    if (m.type === "open") return { doc: "d", version: 1, events: [] };   // the first submit never reached the log
    if (m.type === "submit") { if (sockets.length === 1) return null; committed = true; return { version: 2 }; }
    return {};
  });
  const r = new RewindClient({ url: "ws://x/ws", user: "alice", token: "t", client: "c1", WebSocketImpl: FakeSocket });
  await r.start();
  await r.open("d");
  r.edit([{ op: "insert", node: "t", pos: 2, text: "!" }]);
  const first = sockets[0].sent.find((m) => m.type === "submit");
  assert.equal(first.tx, "c1-1");
  sockets[0].drop();
  assert.equal(r.status, "reconnecting");
  assert.equal(r.document.view.text("t"), "hi!", "kept while away");
  await wait(700);   // backoff 0.25 s with jitter
  const again = sockets[1].sent.filter((m) => m.type === "submit");
  assert.equal(again.length, 1);
  assert.equal(again[0].tx, "c1-1", "the same transaction");
  assert.deepEqual(again[0].ops, first.ops);
  assert.deepEqual(sockets[1].sent.map((m) => m.type).slice(0, 3), ["hello", "open", "submit"], "caught up before sending again");
  assert.equal(sockets[1].sent[1].since, 1);
  assert.ok(committed);
  sockets[1].push({ push: "events", doc: "d", events: [{ version: 2, user: "alice", client: "c1", tx: "c1-1", ops: first.ops }] });
  assert.ok(r.settled);
  assert.equal(r.document.confirmed.text("t"), "hi!");
  r.stop();
});

test("rewind.js exports what it always did, the modules' own", async () => {
  const entry = await import("../../web/rewind.js");
  assert.deepEqual(Object.keys(entry).sort(), ["Doc", "Library", "LocalDocument", "RewindClient", "connect", "pair", "scalars", "transform", "wsURL"]);
  assert.equal(entry.Doc, (await import("../../web/doc.js")).Doc);
  assert.equal(entry.transform, (await import("../../web/transform.js")).transform);
  assert.equal(entry.RewindClient, (await import("../../web/client.js")).RewindClient);
});

test("connect(): the smallest API, over RewindClient — requests, pushes by name and \"*\", the close", async () => {
  const { connect } = await import("../../web/rewind.js");
  const { FakeSocket, sockets } = scriptedSockets((m) => (m.type === "ping" ? {} : null));
  const c = await connect("ws://x/ws", { WebSocketImpl: FakeSocket });
  assert.equal(c.socket, sockets[0]);
  assert.equal(sockets[0].sent.length, 0, "nothing sent by itself: the caller says hello");
  assert.ok((await c.request("ping")).ok);
  const failing = c.request("hello", { user: "x" });
  sockets[0].push({ re: 2, ok: false, error: { code: "unauthorized", message: "who?" } });
  await assert.rejects(failing, (e) => e.code === "unauthorized" && e.message === "who?");
  const heard = [];
  const off = c.on("presence", (m) => heard.push("presence:" + m.client));
  c.on("*", (m) => heard.push("*:" + m.push));
  sockets[0].push({ push: "presence", doc: "d", client: "b" });
  off();
  sockets[0].push({ push: "presence", doc: "d", client: "b" });
  assert.deepEqual(heard, ["presence:b", "*:presence", "*:presence"], "by name, then \"*\"");
  let closed = null;
  c.on("close", (e) => { closed = e; });
  const waiting = c.request("slow");
  c.close();
  await assert.rejects(waiting, (e) => e.code === "closed" && e.close === 1006 && e.message === "connection closed");
  assert.equal(closed.code, 1006);
  await wait(300);
  assert.equal(sockets.length, 1, "no reconnecting");
});

test("connect(): a socket that cannot open rejects", async () => {
  const { connect } = await import("../../web/rewind.js");
  class Refused { constructor() { setTimeout(() => this.onerror?.(), 0); } }
  await assert.rejects(connect("ws://nowhere/ws", { WebSocketImpl: Refused }), /cannot open ws:\/\/nowhere\/ws/);
});
