// rewind.js — Rewind's browser client: an ES module, no build step, no dependencies.
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

// ---------------------------------------------------------------- the document

/** Code points of a string: what protocol positions count. */
export const scalars = (s) => Array.from(s ?? "");

/** A document: nodes by id, each {id, parent, children, kind, frame, clips, focusable, undoScope, props, text: [code points]}. */
export class Doc {
  constructor(nodes) {
    this.nodes = nodes ?? new Map([["root", Doc.node("root", null, "root", [0, 0, 0, 0])]]);
  }

  static node(id, parent, kind, frame) {
    return { id, parent, children: [], kind, frame, clips: false, focusable: false, undoScope: false, props: {}, text: [] };
  }

  /** From the wire's `state`: `{nodes: {id: {parent, children, kind, frame, clips, focusable, undoScope, props, text}}}`. */
  static fromState(state) {
    const nodes = new Map();
    for (const [id, n] of Object.entries(state.nodes)) {
      nodes.set(id, { id, parent: n.parent ?? null, children: [...(n.children ?? [])], kind: n.kind, frame: [...(n.frame ?? [0, 0, 0, 0])],
                      clips: !!n.clips, focusable: !!n.focusable, undoScope: !!n.undoScope, props: { ...(n.props ?? {}) }, text: scalars(n.text) });
    }
    return new Doc(nodes);
  }

  clone() {
    const nodes = new Map();
    for (const [id, n] of this.nodes) nodes.set(id, { ...n, children: [...n.children], frame: [...n.frame], props: { ...n.props }, text: [...n.text] });
    return new Doc(nodes);
  }

  get(id) { return this.nodes.get(id); }
  text(id) { return (this.nodes.get(id)?.text ?? []).join(""); }

  /** The state in the wire's form, ids in the server's order (byte order of their UTF-8). */
  toState() {
    const nodes = {};
    for (const id of [...this.nodes.keys()].sort(byteOrder)) {
      const n = this.nodes.get(id);
      nodes[id] = { parent: n.parent, children: [...n.children], kind: n.kind, frame: [...n.frame], clips: n.clips, focusable: n.focusable,
                    undoScope: n.undoScope, props: { ...n.props }, text: n.text.join("") };
    }
    return { nodes };
  }

  isInSubtree(id, of) {
    for (let c = id; c != null; c = this.nodes.get(c)?.parent) if (c === of) return true;
    return false;
  }

  /** Applies ops in order, all or nothing (throws, changing nothing, when one does not apply). */
  applyAll(ops) {
    const next = this.clone();
    for (const op of ops) next.apply(op);
    this.nodes = next.nodes;
  }

  /** One op, as the server applies it (indexes clamped). Throws when it does not apply. */
  apply(op) {
    const n = this.nodes.get(op.node);
    switch (op.op) {
      case "create": {
        const parent = this.nodes.get(op.parent);
        if (!parent) throw new Error(`parent "${op.parent}" does not exist`);
        const add = (spec, parentID, index) => {
          if (this.nodes.has(spec.node)) throw new Error(`node "${spec.node}" already exists`);
          const node = Doc.node(spec.node, parentID, spec.kind, [...(spec.frame ?? [0, 0, 0, 0])]);
          node.clips = !!spec.clips; node.focusable = !!spec.focusable; node.undoScope = !!spec.undoScope;
          for (const [k, v] of Object.entries(spec.props ?? {})) if (v !== null) node.props[k] = v;
          node.text = scalars(spec.text);
          this.nodes.set(spec.node, node);
          const siblings = this.nodes.get(parentID).children;
          siblings.splice(Math.min(index ?? siblings.length, siblings.length), 0, spec.node);
          (spec.children ?? []).forEach((c, i) => add(c, spec.node, i));
        };
        add(op, op.parent, op.index);
        return;
      }
      case "delete": {
        if (!n) throw new Error(`node "${op.node}" does not exist`);
        if (n.parent == null) throw new Error("the root node cannot be deleted");
        const siblings = this.nodes.get(n.parent).children;
        siblings.splice(siblings.indexOf(op.node), 1);
        const drop = (id) => { for (const c of this.nodes.get(id).children) drop(c); this.nodes.delete(id); };
        drop(op.node);
        return;
      }
      case "set": {
        if (!n) throw new Error(`node "${op.node}" does not exist`);
        if (op.key === "frame") n.frame = [...op.value];
        else if (op.key === "clips" || op.key === "focusable" || op.key === "undoScope") n[op.key] = !!op.value;
        else if (op.value === null) delete n.props[op.key];
        else n.props[op.key] = op.value;
        return;
      }
      case "move": {
        if (!n) throw new Error(`node "${op.node}" does not exist`);
        if (n.parent == null) throw new Error("the root node cannot be moved");
        if (!this.nodes.has(op.parent)) throw new Error(`parent "${op.parent}" does not exist`);
        if (this.isInSubtree(op.parent, op.node)) throw new Error("cannot move a node into its own subtree");
        const old = this.nodes.get(n.parent).children;
        old.splice(old.indexOf(op.node), 1);
        const siblings = this.nodes.get(op.parent).children;
        siblings.splice(Math.min(op.index ?? siblings.length, siblings.length), 0, op.node);
        n.parent = op.parent;
        return;
      }
      case "insert": {
        if (!n) throw new Error(`node "${op.node}" does not exist`);
        if (op.pos > n.text.length) throw new Error(`position out of range: ${op.pos} > ${n.text.length}`);
        n.text.splice(op.pos, 0, ...scalars(op.text));
        return;
      }
      case "remove": {
        if (!n) throw new Error(`node "${op.node}" does not exist`);
        if (op.pos > n.text.length || op.len > n.text.length - op.pos) throw new Error(`range out of range: ${op.pos}+${op.len} > ${n.text.length}`);
        n.text.splice(op.pos, op.len);
        return;
      }
      default:
        throw new Error(`unknown op "${op.op}"`);
    }
  }
}

function byteOrder(a, b) {
  const x = new TextEncoder().encode(a), y = new TextEncoder().encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

// ---------------------------------------------------------------- text transform
// TextTransform.swift, op for op: `b` was committed first and has priority.

const isText = (op) => op.op === "insert" || op.op === "remove";
const count = (text) => scalars(text).length;

function mapThroughRemove(x, at, len) {
  if (x <= at) return x;
  if (x >= at + len) return x - len;
  return at;
}

function removeAroundInsert(node, p, l, q, n) {
  if (q <= p) return [{ op: "remove", node, pos: p + n, len: l }];
  if (q >= p + l) return [{ op: "remove", node, pos: p, len: l }];
  return [{ op: "remove", node, pos: p, len: q - p }, { op: "remove", node, pos: p + n, len: l - (q - p) }];
}

function removeMinus(node, p, l1, q, l2) {
  const start = mapThroughRemove(p, q, l2), end = mapThroughRemove(p + l1, q, l2);
  return end > start ? [{ op: "remove", node, pos: start, len: end - start }] : [];
}

/** One op against one op: `[a after b, b after a]`. */
export function pair(a, b) {
  if (a.node !== b.node || !isText(a) || !isText(b)) return [[a], [b]];
  const node = a.node;
  if (a.op === "insert" && b.op === "insert") {
    const p = a.pos, q = b.pos;
    const a2 = q <= p ? { ...a, pos: p + count(b.text) } : a;
    const b2 = p < q ? { ...b, pos: q + count(a.text) } : b;
    return [[a2], [b2]];
  }
  if (a.op === "insert" && b.op === "remove") {
    return [[{ ...a, pos: mapThroughRemove(a.pos, b.pos, b.len) }], removeAroundInsert(node, b.pos, b.len, a.pos, count(a.text))];
  }
  if (a.op === "remove" && b.op === "insert") {
    return [removeAroundInsert(node, a.pos, a.len, b.pos, count(b.text)), [{ ...b, pos: mapThroughRemove(b.pos, a.pos, a.len) }]];
  }
  return [removeMinus(node, a.pos, a.len, b.pos, b.len), removeMinus(node, b.pos, b.len, a.pos, a.len)];
}

/** `a` (not yet applied) against `b` (applied first): `[a after b, b after a]`. */
export function transform(a, b) {
  if (a.length === 0 || b.length === 0) return [a, b];
  if (a.length === 1 && b.length === 1) return pair(a[0], b[0]);
  let through = b;
  const out = [];
  for (const x of a) {
    let xs = [x];
    const next = [];
    for (const y of through) {
      let ys = [y];
      if (xs.length) [xs, ys] = transform(xs, ys);
      next.push(...ys);
    }
    out.push(...xs);
    through = next;
  }
  return [out, through];
}

// ---------------------------------------------------------------- the local copy

/**
 * LocalDocument.swift: `confirmed` is the server's state at `version`; `view`
 * adds what this terminal has pending. One submit in flight; edits made
 * meanwhile wait in `buffered` (segments: each a future submit).
 */
export class LocalDocument {
  constructor() {
    this.confirmed = new Doc();
    this.version = 0;
    this.view = new Doc();
    this.inFlight = null;   // {tx, base, ops (as sent), current (transformed since)}
    this.buffered = [];
    this.selection = null;  // {node, start, end} in view positions
  }

  get isSettled() { return !this.inFlight && this.buffered.length === 0; }

  reset(doc, version) {
    this.confirmed = doc;
    this.version = version;
    this.inFlight = null;
    this.buffered = [];
    this.view = doc.clone();
    this.clampSelection();
  }

  /** A local edit, shown at once (throws, changing nothing, when it does not apply to the view). */
  edit(ops, newSegment = false) {
    this.view.applyAll(ops);
    if (newSegment || this.buffered.length === 0) this.buffered.push([...ops]);
    else this.buffered[this.buffered.length - 1].push(...ops);
  }

  /** The next submit, when none is in flight (null: nothing to send). */
  nextSubmit(tx) {
    if (this.inFlight || this.buffered.length === 0) return null;
    const ops = this.buffered.shift();
    if (ops.length === 0) return null;
    this.inFlight = { tx, base: this.version, ops, current: ops };
    return this.inFlight;
  }

  /** One committed event, in order: "applied" | "own" | "duplicate" | "gap" | "diverged". */
  apply({ version, ops, tx, own }) {
    if (version <= this.version) return "duplicate";
    if (version !== this.version + 1) return "gap";
    try { this.confirmed.applyAll(ops); } catch { return "diverged"; }
    this.version = version;
    if (this.inFlight && own && tx === this.inFlight.tx) {
      this.inFlight = null;
      this.rebuildView();
      return "own";
    }
    let theirs = ops;
    if (this.inFlight) [this.inFlight.current, theirs] = transform(this.inFlight.current, theirs);
    for (let i = 0; i < this.buffered.length; i++) [this.buffered[i], theirs] = transform(this.buffered[i], theirs);
    this.moveSelection(theirs);
    this.rebuildView();
    return "applied";
  }

  dropPending() {
    this.inFlight = null;
    this.buffered = [];
    this.rebuildView();
  }

  rebuildView() {
    const v = this.confirmed.clone();
    for (const op of [...(this.inFlight?.current ?? []), ...this.buffered.flat()]) {
      try { v.apply(op); } catch { /* someone else's change made it vanish: the server refuses it too */ }
    }
    this.view = v;
    this.clampSelection();
  }

  moveSelection(ops) {
    const s = this.selection;
    if (!s) return;
    for (const op of ops) {
      if (op.node !== s.node) continue;
      if (op.op === "insert") {
        const n = count(op.text);
        if (op.pos < s.start) s.start += n;
        if (op.pos < s.end) s.end += n;
      } else if (op.op === "remove") {
        s.start = mapThroughRemove(s.start, op.pos, op.len);
        s.end = mapThroughRemove(s.end, op.pos, op.len);
      }
    }
  }

  clampSelection() {
    const s = this.selection;
    if (!s) return;
    const n = this.view.get(s.node);
    if (!n) { this.selection = null; return; }
    const len = n.text.length;
    this.selection = { node: s.node, start: Math.min(s.start, len), end: Math.min(Math.max(s.end, s.start), len) };
  }
}

// ---------------------------------------------------------------- the client

/** `ws://` or `wss://` and this page's host, path `/ws`. */
export function wsURL(location = globalThis.location) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
}

const randomID = () => Math.random().toString(36).slice(2, 10) + Date.now().toString(36).slice(-4);

/**
 * A session with the server over a WebSocket, for one document at a time.
 * Dispatches "change" events (`detail`: "status", "document", "presence",
 * "prompts", "promptState", "shortcuts", "failed") and "push" events (`detail`:
 * every push as received).
 *
 * status: "connecting" | "ready" | "reconnecting" | "offline" | "closed"
 */
export class RewindClient extends EventTarget {
  constructor({ url = wsURL(), user, token, client = "web-" + randomID(), locale, WebSocketImpl = globalThis.WebSocket } = {}) {
    super();
    Object.assign(this, { url, user, token, client, locale, WebSocketImpl });
    this.status = "offline";
    this.doc = null;                 // the id of the open document
    this.document = new LocalDocument();
    this.loaded = false;
    this.presence = new Map();       // client → {user, client, node, selection}
    this.prompts = [];               // presented prompts, newest last
    this.promptState = null;
    this.shortcuts = [];
    this.lastError = null;
    this.socket = null;
    this.nextID = 1;
    this.waiting = new Map();        // id → {resolve, reject}
    this.backoff = 250;
    this.sent = 0;                   // submits made (tx numbering)
    this.stopped = false;
    this.catchingUp = false;
    this.focused = null;
  }

  emit(kind) { this.dispatchEvent(new CustomEvent("change", { detail: kind })); }
  setStatus(s) { if (this.status !== s) { this.status = s; this.emit("status"); } }

  /** Connects and says hello; resolves with the hello reply (reconnects by itself afterwards). */
  start() {
    this.stopped = false;
    return new Promise((resolve, reject) => {
      this.firstHello = { resolve, reject };
      this.connect();
    });
  }

  stop() {
    this.stopped = true;
    clearInterval(this.pinger);
    this.socket?.close(1000);
    this.setStatus("closed");
  }

  connect() {
    if (this.stopped) return;
    this.setStatus(this.loaded ? "reconnecting" : "connecting");
    const socket = new this.WebSocketImpl(this.url);
    this.socket = socket;
    socket.onopen = () => this.hello();
    socket.onmessage = (e) => this.receive(JSON.parse(e.data));
    socket.onclose = () => { if (this.socket === socket) this.disconnected(); };
    socket.onerror = () => {};
  }

  disconnected() {
    this.socket = null;
    clearInterval(this.pinger);
    for (const w of this.waiting.values()) w.reject(Object.assign(new Error("the connection closed"), { code: "unavailable" }));
    this.waiting.clear();
    if (this.stopped || this.status === "closed") return;
    this.setStatus(this.loaded ? "reconnecting" : "offline");
    const wait = this.backoff * (0.5 + Math.random());   // jitter: a restarted server is not hit by everyone at once
    this.backoff = Math.min(this.backoff * 2, 5000);
    setTimeout(() => this.connect(), wait);
  }

  /** Sends a request; resolves with the reply, rejects with an Error carrying `code` (and `details`). */
  request(type, fields = {}) {
    if (!this.socket || this.socket.readyState !== 1) return Promise.reject(Object.assign(new Error("not connected"), { code: "unavailable" }));
    const id = this.nextID++;
    this.socket.send(JSON.stringify({ id, type, ...fields }));
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }

  async hello() {
    try {
      const r = await this.request("hello", { user: this.user, token: this.token, client: this.client, ...(this.locale ? { locale: this.locale } : {}) });
      this.backoff = 250;
      this.shortcuts = r.shortcuts ?? [];
      this.emit("shortcuts");
      clearInterval(this.pinger);
      this.pinger = setInterval(() => this.request("ping").catch(() => {}), 15000);
      this.pinger.unref?.();   // under node (tests): the ping does not keep the process alive
      if (this.doc) await this.reopen();
      else this.setStatus("ready");
      this.firstHello?.resolve(r);
      this.firstHello = null;
    } catch (e) {
      this.lastError = e;
      if (e.code === "unauthorized") {
        this.stopped = true;
        this.setStatus("closed");
        this.socket?.close(1000);
      }
      this.firstHello?.reject(e);
      this.firstHello = null;
    }
  }

  receive(m) {
    if (m.re !== undefined && m.push === undefined) {
      const w = this.waiting.get(m.re);
      if (!w) return;
      this.waiting.delete(m.re);
      if (m.ok) w.resolve(m);
      else w.reject(Object.assign(new Error(m.error?.message ?? "error"), m.error ?? {}));
      return;
    }
    if (m.push) this.handlePush(m);
  }

  handlePush(m) {
    this.dispatchEvent(new CustomEvent("push", { detail: m }));
    switch (m.push) {
      case "events":
        if (m.doc !== this.doc || !this.loaded || this.catchingUp) return;
        for (const e of m.events) if (!this.applyEvent(e)) return this.reload();
        this.emit("document");
        this.pump();
        return;
      case "presence":
        if (m.doc !== this.doc || m.client === this.client) return;
        if (m.node == null) this.presence.delete(m.client); else this.presence.set(m.client, m);
        this.emit("presence");
        return;
      case "prompt":
        this.prompts = this.prompts.filter((p) => p.id !== m.prompt.id).concat([{ ...m.prompt, doc: m.doc }]);
        this.emit("prompts");
        return;
      case "dismiss":
        this.prompts = this.prompts.filter((p) => p.id !== m.prompt);
        this.emit("prompts");
        return;
      case "prompt_state":
        if (m.doc !== this.doc) return;
        this.promptState = m;
        this.emit("promptState");
        return;
      case "shortcuts":
        this.shortcuts = m.items ?? [];
        this.emit("shortcuts");
        return;
      case "closed":
        if (m.doc !== this.doc) return;
        this.lastError = Object.assign(new Error(m.reason === "deleted" ? "the document was deleted" : "access to the document was taken away"), { code: m.reason });
        this.doc = null;
        this.loaded = false;
        this.emit("failed");
        this.emit("document");
        return;
      case "bye":
        this.lastError = Object.assign(new Error(m.message ?? m.reason), { code: m.reason });
        if (m.retry === false) { this.stopped = true; this.setStatus("closed"); }
        return;   // the close follows; reconnecting (or not) happens there
    }
  }

  /** Opens `doc` (its state, then pushes); the previous document is closed. */
  async open(doc) {
    if (this.doc && this.doc !== doc) this.request("close", { doc: this.doc }).catch(() => {});
    this.doc = doc;
    this.loaded = false;
    this.document = new LocalDocument();
    this.presence.clear();
    this.promptState = null;
    this.focused = null;
    await this.openFresh();
  }

  async openFresh() {
    const r = await this.request("open", { doc: this.doc });
    this.document.reset(Doc.fromState(r.state), r.version);
    this.loaded = true;
    this.setStatus("ready");
    this.emit("document");
    this.pump();
    return r;
  }

  /** After a reconnect: what was missed, then what was in flight is sent again (same tx). */
  async reopen() {
    try {
      if (!this.loaded) { await this.openFresh(); return; }
      await this.catchUp();
      if (this.document.inFlight) this.sendSubmit(this.document.inFlight);
      if (this.focused && this.document.view.get(this.focused)) this.request("focus", { doc: this.doc, node: this.focused }).catch(() => {});
      this.setStatus("ready");
      this.emit("document");
      this.pump();
    } catch (e) {
      this.lastError = e;
      this.emit("failed");
    }
  }

  async catchUp() {
    this.catchingUp = true;
    try {
      for (;;) {
        let r;
        try { r = await this.request("open", { doc: this.doc, since: this.document.version }); } catch (e) {
          if (e.code === "version") { this.catchingUp = false; return this.reload(); }
          throw e;
        }
        for (const e of r.events ?? []) if (!this.applyEvent(e)) { this.catchingUp = false; return this.reload(); }
        if (!r.more) break;
      }
    } finally {
      this.catchingUp = false;
    }
  }

  reload() {
    if (!this.document.isSettled) {
      this.lastError = Object.assign(new Error("the document was reloaded from the server; edits not yet committed were dropped"), { code: "conflict" });
      this.emit("failed");
    }
    this.loaded = false;
    return this.openFresh();
  }

  applyEvent(e) {
    const result = this.document.apply({ version: e.version, ops: e.ops, tx: e.tx, own: e.user === this.user && e.client === this.client });
    if (result === "gap" && !this.catchingUp) { this.catchUp().then(() => { this.emit("document"); this.pump(); }).catch(() => {}); }
    return result !== "diverged";
  }

  /** A local edit: shown at once, committed in order (throws when it does not apply to what is shown). */
  edit(ops, { newSegment = false } = {}) {
    this.document.edit(ops, newSegment);
    this.pump();   // on the wire before the page redraws
    this.emit("document");
  }

  /** Sends the next submit if none is in flight and the connection is ready. */
  pump() {
    if (this.status !== "ready" || this.catchingUp || !this.loaded) return;
    if (this.document.inFlight || this.document.buffered.length === 0) return;
    const s = this.document.nextSubmit(`${this.client}-${++this.sent}`);
    if (s) this.sendSubmit(s);
  }

  sendSubmit(s) {
    const fields = { doc: this.doc, tx: s.tx, base: s.base, ops: s.ops };
    this.request("submit", fields).then(() => this.pump()).catch((e) => {
      if (e.code === "unavailable") return;   // sent again after the reconnect
      if (this.document.inFlight?.tx === s.tx) { this.document.dropPending(); this.emit("document"); }
      this.lastError = e;
      this.emit("failed");
    });
  }

  /** Is everything shown committed? */
  get settled() { return this.document.isSettled; }

  /** Resolves once every edit shown is committed (at once when none waits). */
  settle() {
    if (this.document.isSettled) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => { if (this.document.isSettled) { this.removeEventListener("change", check); resolve(); } };
      this.addEventListener("change", check);
    });
  }

  // Requests about the history wait for the edits before them: edits are sent one
  // submit at a time, so an undo sent at once would overtake typing not yet sent.
  async undo(fields = {}) { await this.settle(); return this.request("undo", { doc: this.doc, ...fields }); }
  async redo(fields = {}) { await this.settle(); return this.request("redo", { doc: this.doc, ...fields }); }
  async shake() { await this.settle(); return this.request("motion", { doc: this.doc, motion: "shake" }); }
  respond(prompt, action) { return this.request("respond", { prompt, action }); }
  focus(node) { this.focused = node; return this.request("focus", { doc: this.doc, node }); }
  blur() { this.focused = null; return this.request("blur", { doc: this.doc }); }
  select(node, start, end = start) {
    this.document.selection = { node, start, end };
    this.focused = node;
    return this.request("select", { doc: this.doc, node, start, end });
  }
  peek(doc, fields = {}) { return this.request("peek", { doc, ...fields }); }
  pop(preview) { return this.request("pop", { preview }); }
  async scrub(progress) { await this.settle(); return this.request("scrub", { doc: this.doc, progress }); }
  scrubCommit() { return this.request("scrub_commit", { doc: this.doc }); }
  scrubCancel() { return this.request("scrub_cancel", { doc: this.doc }); }
  createDocument(fields = {}) { return this.request("create_doc", fields); }
  /** Deletes a document you own (`delete_doc`); terminals on it get `closed` `deleted`. */
  deleteDocument(doc = this.doc) { return this.request("delete_doc", { doc }); }
  shortcut(item) { return this.request("shortcut", { shortcut: { type: item.type, info: item.info ?? {} } }); }
}

/** The first, smallest API (kept): a connected socket with `request` and `on`. */
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
      if (message.re !== undefined && message.push === undefined && waiting.has(message.re)) {
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
