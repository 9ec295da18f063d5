// web/offline.js: edits kept across a reload and sent once, by a new page (a new
// client id) that finds them; the store in memory (node has no IndexedDB).
import { test } from "node:test";
import assert from "node:assert/strict";
import { RewindClient } from "../../web/client.js";
import { LocalDocument } from "../../web/local-document.js";
import { Doc } from "../../web/doc.js";
import { KeptEdits, openStore, restoreInto, waiting } from "../../web/offline.js";
import { oneText, scriptedSockets, wait } from "./fake-socket.mjs";

test("LocalDocument: a named edit is a submit of its own, and the name goes with it", () => {
  const l = new LocalDocument();
  l.reset(Doc.fromState(oneText("hi")), 1);
  l.edit([{ op: "insert", node: "t", pos: 2, text: "a" }]);
  l.edit([{ op: "set", node: "t", key: "frame", value: [1, 1, 9, 9] }], false, "Move");
  l.edit([{ op: "insert", node: "t", pos: 3, text: "b" }]);
  assert.equal(waiting(l), 3, "typing, the move, typing again: three submits");
  assert.equal(l.nextSubmit("x-1").action, undefined);
  assert.equal(l.nextSubmit("x-2"), null, "one in flight");
  l.apply({ version: 2, ops: l.inFlight.ops, tx: "x-1", own: true });
  assert.equal(l.nextSubmit("x-2").action, "Move");
});

test("a reload's page restores the kept copy, catches up, and sends the kept submit again with its tx: committed once", async () => {
  const store = openStore();
  let committed = 0;
  // The first page: its submit reached the log (version 2) but the reply never came; then the page went away.
  const first = scriptedSockets((m) => {
    if (m.type === "hello") return { user: "alice", client: m.client, shortcuts: [] };
    if (m.type === "open") return { doc: "d", version: 1, state: oneText("hi") };
    return null;   // the submit: no reply
  });
  const a = new RewindClient({ url: "ws://x/ws", user: "alice", token: "t", client: "page-1", WebSocketImpl: first.FakeSocket });
  const keptA = new KeptEdits(store).attach(a);
  await a.start();
  await a.open("d");
  a.edit([{ op: "insert", node: "t", pos: 2, text: "!" }]);
  a.edit([{ op: "insert", node: "t", pos: 3, text: "?" }]);
  await keptA.save(a);
  const sent = first.sockets[0].sent.find((m) => m.type === "submit");
  a.stop();
  assert.deepEqual(await keptA.documents("alice"), ["d"]);

  // The page after the reload: another client id; the log has the first submit (by page-1) and someone else's since.
  const second = scriptedSockets((m) => {
    if (m.type === "hello") return { user: "alice", client: m.client, shortcuts: [] };
    if (m.type === "open") return { doc: "d", version: 3, events: [
      { version: 2, user: "alice", client: "page-1", tx: sent.tx, ops: sent.ops },
      { version: 3, user: "bob", client: "b", tx: "b-1", ops: [{ op: "insert", node: "t", pos: 0, text: ">" }] }] };
    if (m.type === "submit") { committed++; return { version: 4 }; }
    return {};
  });
  const b = new RewindClient({ url: "ws://x/ws", user: "alice", token: "t", client: "page-2", WebSocketImpl: second.FakeSocket });
  const keptB = new KeptEdits(store).attach(b);
  const record = await keptB.load("alice", "d");
  restoreInto(b, record);
  assert.equal(b.document.view.text("t"), "hi!?", "shown as it was, before the server answers");
  assert.equal(waiting(b.document), 2);
  await b.start();
  await wait(20);
  const submits = second.sockets[0].sent.filter((m) => m.type === "submit");
  assert.deepEqual(second.sockets[0].sent.slice(0, 2).map((m) => [m.type, m.since]), [["hello", undefined], ["open", 1]], "caught up from the kept version");
  assert.equal(submits.length, 1, "the committed one is not sent again; the buffered one is");
  assert.deepEqual(submits[0].ops, [{ op: "insert", node: "t", pos: 4, text: "?" }], "moved through bob's insert");
  assert.equal(submits[0].base, 3);
  assert.equal(committed, 1);
  second.sockets[0].push({ push: "events", doc: "d", events: [{ version: 4, user: "alice", client: "page-2", tx: submits[0].tx, ops: submits[0].ops }] });
  assert.ok(b.settled);
  assert.equal(b.document.confirmed.text("t"), ">hi!?");
  await keptB.save(b);
  assert.equal(await keptB.load("alice", "d"), null, "forgotten once committed");
  b.stop();
});

test("a copy kept before its edit was sent, restored after the edit was committed, sends nothing twice", async () => {
  const store = openStore();
  const first = scriptedSockets((m) => {
    if (m.type === "hello") return { user: "alice", client: m.client, shortcuts: [] };
    if (m.type === "open") return { doc: "d", version: 1, state: oneText("hi") };
    if (m.type === "submit") return { version: 2 };
    return {};
  });
  const a = new RewindClient({ url: "ws://x/ws", user: "alice", token: "t", client: "page-1", WebSocketImpl: first.FakeSocket });
  const keptA = new KeptEdits(store);
  await a.start();
  await a.open("d");
  a.setStatus("reconnecting");                     // as if the socket were gone: nothing is sent
  a.edit([{ op: "insert", node: "t", pos: 2, text: "!" }]);
  await keptA.save(a);                             // kept as buffered, its tx fixed
  const keptTx = (await keptA.load("alice", "d")).txs[0];
  assert.ok(keptTx);
  a.setStatus("ready");
  a.pump();                                        // back: sent under the kept tx, and committed
  const sent = first.sockets[0].sent.find((m) => m.type === "submit");
  assert.equal(sent.tx, keptTx, "the kept segment is sent under the tx it was kept with");
  a.edit([{ op: "insert", node: "t", pos: 3, text: "?" }]);
  assert.equal(a.document.buffered.length, 1, "typing after a save starts a new segment");
  a.stop();

  let submits = [];
  const second = scriptedSockets((m) => {
    if (m.type === "hello") return { user: "alice", client: m.client, shortcuts: [] };
    if (m.type === "open") return { doc: "d", version: 2, events: [{ version: 2, user: "alice", client: "page-1", tx: sent.tx, ops: sent.ops }] };
    if (m.type === "submit") submits.push(m);
    return null;
  });
  const b = new RewindClient({ url: "ws://x/ws", user: "alice", token: "t", client: "page-2", WebSocketImpl: second.FakeSocket });
  restoreInto(b, await new KeptEdits(store).load("alice", "d"));   // the stale copy: "!" not yet sent
  await b.start();
  await wait(20);
  assert.deepEqual(submits, [], "its commit is recognised by its tx: nothing sent again");
  assert.ok(b.settled);
  assert.equal(b.document.view.text("t"), "hi!");
  b.stop();
});
