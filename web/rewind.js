// rewind.js — Rewind's browser client: ES modules, no build step, no dependencies.
// This is the entry point apps import; the code is in modules by concern, all
// served beside it (GET /<name>.js):
//   doc.js             the document model (Doc, scalars)
//   transform.js       the text transform (pair, transform)
//   local-document.js  this terminal's copy (LocalDocument)
//   connection.js      the socket: hello, replies matched to requests, ping, reconnecting (wsURL)
//   library.js         Library: a user's documents (list, create, rename, share, delete, bring back)
//   client.js          RewindClient (a Library): the open document kept in step, pushes (PUSH_HANDLERS), requests
//
// The same guarantees as the Swift RewindClient (Sources/RewindClient):
//   - replies matched by `re`; `hello` first; pushes to listeners;
//   - a document copy (LocalDocument): the server's state at `version` plus this
//     terminal's edits not yet committed, shown at once; one submit in flight,
//     later edits buffered and transformed through others' events with the
//     server's own text transform (TextTransform.swift, ported op for op), so
//     the local view always equals what the server will have;
//   - catch-up with `open since` after a reconnect; the unacknowledged `tx`
//     sent again (the server answers a repeated tx with its first result, so it
//     is committed once); reconnect with backoff (0.25 s doubling to 5 s) and
//     jitter; a ping every 15 s;
//   - presence, prompts and `prompt_state`, shortcuts, peek, pop, scrub.
//
//   import { RewindClient } from "/rewind.js";
//   const r = new RewindClient({ user: "alice", token: "…" });
//   r.addEventListener("change", (e) => render(e.detail));   // "document", "status", "presence", …
//   await r.start();  await r.open("hello");
//   r.edit([{ op: "insert", node: "t", pos: 0, text: "Hi " }]);   // shown at once, committed in order
//
// Positions in ops are Unicode scalars (code points), as on the wire; `Doc`
// keeps each node's text as an array of code points.

import { RewindClient, wsURL } from "./client.js";

export { scalars, Doc } from "./doc.js";
export { pair, transform } from "./transform.js";
export { LocalDocument } from "./local-document.js";
export { RewindClient, wsURL };
export { Library } from "./library.js";

/**
 * The first, smallest API (kept): a connected socket with `request` and `on`
 * (`on("*", …)` every push, `on("close", …)` the socket's end). Nothing is sent
 * until you send it (`hello` first) and a lost connection stays lost. A thin
 * wrapper over RewindClient: replies are matched by its matcher.
 */
export function connect(url = wsURL(), { WebSocketImpl = globalThis.WebSocket } = {}) {
  return new Promise((resolve, reject) => {
    const r = new RewindClient({ url, WebSocketImpl });
    r.stopped = true;   // no reconnecting
    const socket = r.attach(new WebSocketImpl(url));
    const listeners = new Map();
    r.addEventListener("push", ({ detail: m }) => {
      for (const l of listeners.get(m.push) ?? []) l(m);
      for (const l of listeners.get("*") ?? []) l(m);
    });
    const client = {
      socket,
      request: (type, fields = {}) => r.request(type, fields),
      on(push, listener) {
        if (!listeners.has(push)) listeners.set(push, new Set());
        listeners.get(push).add(listener);
        return () => listeners.get(push).delete(listener);
      },
      close() { socket.close(1000); },
    };
    socket.onopen = () => resolve(client);   // instead of RewindClient's own hello
    socket.onerror = () => reject(new Error("cannot open " + url));
    socket.onclose = (event) => {
      r.failWaiting(() => Object.assign(new Error("connection closed"), { code: "closed", close: event.code }));
      for (const l of listeners.get("close") ?? []) l(event);
    };
  });
}
