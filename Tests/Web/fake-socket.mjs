// A WebSocket the tests script (not a test file itself: node --test runs *.test.mjs).
// `reply(message, socket)` answers a request: the fields of an ok reply, or null (no reply).

export function scriptedSockets(reply) {
  const sockets = [];
  class FakeSocket {
    constructor(url) { this.url = url; this.readyState = 0; this.sent = []; sockets.push(this); setTimeout(() => { this.readyState = 1; this.onopen?.(); }, 0); }
    send(text) {
      const m = JSON.parse(text);
      this.sent.push(m);
      const answer = reply(m, this);
      if (answer) setTimeout(() => this.onmessage?.({ data: JSON.stringify({ re: m.id, ok: true, ...answer }) }), 0);
    }
    push(m) { this.onmessage?.({ data: JSON.stringify(m) }); }
    drop() { this.readyState = 3; this.onclose?.({ code: 1006 }); }
    close() { this.drop(); }
  }
  return { FakeSocket, sockets };
}

export const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** A document's state on the wire: the root and one text node `t`. */
export const oneText = (text) => ({ nodes: { root: { parent: null, children: ["t"], kind: "root", frame: [0, 0, 0, 0], props: {}, text: "" },
                                             t: { parent: "root", children: [], kind: "text", frame: [0, 0, 9, 9], props: {}, text } } });
