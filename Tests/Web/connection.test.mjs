// web/connection.js: the socket's side of a session, directly — hello, the reply
// matcher, reconnecting.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Connection, wsURL } from "../../web/connection.js";
import { scriptedSockets, wait } from "./fake-socket.mjs";

test("wsURL: ws or wss, this page's host, /ws", () => {
  assert.equal(wsURL({ protocol: "http:", host: "h:1" }), "ws://h:1/ws");
  assert.equal(wsURL({ protocol: "https:", host: "h" }), "wss://h/ws");
});

test("replies are matched by re; errors carry their code; a reply nobody waits for and pushes are not replies", async () => {
  const { FakeSocket, sockets } = scriptedSockets((m) => (m.type === "hello" ? { user: "u" } : null));
  const c = new Connection({ url: "ws://x/ws", user: "u", token: "t", client: "c", WebSocketImpl: FakeSocket });
  const pushes = [];
  c.handlePush = (m) => pushes.push(m);
  const hello = await c.start();
  assert.equal(hello.user, "u");
  assert.deepEqual(sockets[0].sent[0], { id: 1, type: "hello", user: "u", token: "t", client: "c" }, "no locale unless given");
  assert.equal(c.status, "ready");
  const a = c.request("a"), b = c.request("b", { x: 1 });
  assert.deepEqual(sockets[0].sent[2], { id: 3, type: "b", x: 1 });
  sockets[0].push({ re: 3, ok: false, error: { code: "not_found", message: "no such thing", details: { d: 1 } } });
  await assert.rejects(b, (e) => e.message === "no such thing" && e.code === "not_found" && e.details.d === 1);
  sockets[0].push({ re: 99, ok: true });
  sockets[0].push({ re: 2, push: "events" });
  assert.equal(pushes.length, 1, "a message with push is a push, whatever its re");
  sockets[0].push({ re: 2, ok: true, v: 7 });
  assert.equal((await a).v, 7);
  c.stop();
  assert.equal(c.status, "closed");
});

test("a lost connection fails what waits, then reconnects and says hello again; unauthorized stops", async () => {
  let refuse = false;
  const { FakeSocket, sockets } = scriptedSockets((m) => {
    if (m.type !== "hello") return null;
    if (refuse) { setTimeout(() => sockets.at(-1).push({ re: m.id, ok: false, error: { code: "unauthorized", message: "no" } }), 0); return null; }
    return {};
  });
  const c = new Connection({ url: "ws://x/ws", user: "u", token: "t", client: "c", locale: "fr", WebSocketImpl: FakeSocket });
  await c.start();
  assert.equal(sockets[0].sent[0].locale, "fr");
  const pending = c.request("slow");
  sockets[0].drop();
  await assert.rejects(pending, (e) => e.code === "unavailable");
  assert.equal(c.status, "offline", "nothing loaded: offline, not reconnecting");
  await assert.rejects(c.request("now"), (e) => e.code === "unavailable" && e.message === "not connected");
  refuse = true;
  await wait(500);
  assert.equal(sockets.length, 2);
  assert.equal(sockets[1].sent[0].type, "hello");
  assert.equal(c.status, "closed");
  assert.equal(c.lastError.code, "unauthorized");
  assert.ok(c.stopped);
});

test("getToken: asked at every hello and on token_expiring, whose new token goes out with refresh", async () => {
  let minted = 0;
  const { FakeSocket, sockets } = scriptedSockets((m) => (m.type === "hello" ? {} : m.type === "refresh" ? { expires_at: 1 } : null));
  const c = new Connection({ url: "ws://x/ws", client: "c", getToken: async () => "jwt-" + ++minted, WebSocketImpl: FakeSocket });
  c.handlePush = (m) => { if (m.push === "token_expiring") c.refreshToken(); };
  await c.start();
  assert.equal(sockets[0].sent[0].token, "jwt-1");
  sockets[0].push({ push: "token_expiring", in_ms: 60000 });
  await wait(5);
  assert.deepEqual(sockets[0].sent.at(-1), { id: 2, type: "refresh", token: "jwt-2" });
  sockets[0].drop();  // as after `bye` token_expired: the next hello has a new token
  await wait(600);
  assert.equal(sockets[1].sent[0].type, "hello");
  assert.equal(sockets[1].sent[0].token, "jwt-3");
  c.stop();
});
