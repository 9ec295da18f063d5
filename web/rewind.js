// rewind.js — the browser client of Rewind (an ES module, no build step).
// This first version speaks the protocol over the server's WebSocket: requests
// with promises matched by `re`, pushes to listeners. The full client (catch-up,
// buffered edits transformed through others' events, reconnects) comes with the
// web editor.
//
//   import { connect } from "/rewind.js";
//   const r = await connect();                       // ws(s)://this host/ws
//   await r.request("hello", { user: "alice", token: "…" });
//   r.on("events", (push) => console.log(push.events));

export function wsURL(location = globalThis.location) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
}

export function connect(url = wsURL()) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const waiting = new Map();
    const listeners = new Map();
    let nextID = 1;
    const client = {
      socket,
      request(type, fields = {}) {
        const id = nextID++;
        socket.send(JSON.stringify({ id, type, ...fields }));
        return new Promise((ok, fail) => waiting.set(id, { ok, fail }));
      },
      on(push, listener) {
        if (!listeners.has(push)) listeners.set(push, new Set());
        listeners.get(push).add(listener);
        return () => listeners.get(push).delete(listener);
      },
      close() { socket.close(1000); },
    };
    socket.onopen = () => resolve(client);
    socket.onerror = () => reject(new Error("cannot open " + url));
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.re !== undefined && waiting.has(message.re)) {
        const w = waiting.get(message.re);
        waiting.delete(message.re);
        if (message.ok) w.ok(message); else w.fail(Object.assign(new Error(message.error.message), message.error));
      } else if (message.push) {
        for (const l of listeners.get(message.push) ?? []) l(message);
        for (const l of listeners.get("*") ?? []) l(message);
      }
    };
    socket.onclose = (event) => {
      for (const w of waiting.values()) w.fail(Object.assign(new Error("connection closed"), { code: "closed", close: event.code }));
      waiting.clear();
      for (const l of listeners.get("close") ?? []) l(event);
    };
  });
}
