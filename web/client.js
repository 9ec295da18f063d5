// client.js — RewindClient: a session with the server for one document at a
// time, over a Connection (connection.js: the socket, hello, the reply matcher,
// reconnecting) with the requests about documents (library.js). Pushes are
// handled by one table, PUSH_HANDLERS (pushes.js), by name.

import { Doc } from "./doc.js";
import { LocalDocument } from "./local-document.js";
import { wsURL } from "./connection.js";
import { Library } from "./library.js";
import { PUSH_HANDLERS } from "./pushes.js";

export { wsURL };
export { PUSH_HANDLERS, pushNames } from "./pushes.js";

const randomID = () => Math.random().toString(36).slice(2, 10) + Date.now().toString(36).slice(-4);


/**
 * A session with the server over a WebSocket, for one document at a time.
 * Dispatches "change" events (`detail`: "status", "document", "presence",
 * "prompts", "promptState", "shortcuts", "title", "failed") and "push" events (`detail`:
 * every push as received).
 *
 * status: "connecting" | "ready" | "reconnecting" | "offline" | "closed"
 */
export class RewindClient extends Library {
  constructor({ url = wsURL(), user, token, getToken, client = "web-" + randomID(), locale, WebSocketImpl = globalThis.WebSocket } = {}) {
    super({ url, user, token, getToken, client, locale, WebSocketImpl });
    this.doc = null;                 // the id of the open document
    this.title = null;               // its title, as `renamed` last said (the page reads `doc_info` on open)
    this.document = new LocalDocument();
    this.presence = new Map();       // client → {user, client, node, selection}
    this.prompts = [];               // presented prompts, newest last
    this.promptState = null;
    this.shortcuts = [];
    this.sent = 0;                   // submits made (tx numbering)
    this.catchingUp = false;
    this.focused = null;
    this.formerClients = new Set();  // client ids of kept edits this one sends (offline.js)
  }

  /** After each hello: the quick actions it lists, then the open document caught up (or, with none, ready). */
  async afterHello(r) {
    this.shortcuts = r.shortcuts ?? [];
    this.emit("shortcuts");
    if (this.doc) await this.reopen();
    else this.setStatus("ready");
  }

  handlePush(m) {
    this.dispatchEvent(new CustomEvent("push", { detail: m }));
    if (Object.hasOwn(PUSH_HANDLERS, m.push)) PUSH_HANDLERS[m.push](this, m);
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
    try { await this.resume(); } catch (e) { this.lastError = e; this.emit("failed"); }
  }

  async resume() {
    if (!this.loaded) { await this.openFresh(); return; }
    await this.catchUp();
    if (this.document.inFlight) this.sendSubmit(this.document.inFlight);
    if (this.focused && this.document.view.get(this.focused)) this.request("focus", { doc: this.doc, node: this.focused }).catch(() => {});
    this.setStatus("ready");
    this.emit("document");
    this.pump();
  }

  /** Moved to another PostgreSQL cluster (`closed` `moved`): opened again once it is served there (`unavailable` till then). */
  async reopenAfterMove() {
    const doc = this.doc;
    this.setStatus("reconnecting");
    for (let wait = 50; this.doc === doc && this.status === "reconnecting"; wait = Math.min(wait * 2, 2000)) {
      try { return await this.resume(); } catch (e) {
        if (e.code !== "unavailable") { this.lastError = e; this.emit("failed"); return; }
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
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
    // Own: this terminal's, or a page's before a reload whose kept edits it sends (offline.js).
    const own = e.user === (this.shownAs ?? this.user) && (e.client === this.client || this.formerClients.has(e.client));
    const result = this.document.apply({ version: e.version, ops: e.ops, tx: e.tx, own });
    if (result === "gap" && !this.catchingUp) { this.catchUp().then(() => { this.emit("document"); this.pump(); }).catch(() => {}); }
    return result !== "diverged";
  }

  /**
   * A local edit: shown at once, committed in order (throws when it does not apply to what is shown).
   * `action` makes it an undo group of its own by that name ("Move", "Resize"); else the server names it.
   */
  edit(ops, { newSegment = false, action = null } = {}) {
    this.document.edit(ops, newSegment, action);
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
    const fields = { doc: this.doc, tx: s.tx, base: s.base, ops: s.ops, ...(s.action ? { action: s.action } : {}) };
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
  async scrub(progress) { await this.settle(); return this.request("scrub", { doc: this.doc, progress }); }
  scrubCommit() { return this.request("scrub_commit", { doc: this.doc }); }
  scrubCancel() { return this.request("scrub_cancel", { doc: this.doc }); }
  /** Closes the open document (its pushes stop; others see this terminal leave). */
  closeDocument() {
    if (this.doc) this.request("close", { doc: this.doc }).catch(() => {});
    this.doc = null;
    this.loaded = false;
    this.title = null;
    this.presence.clear();
    this.promptState = null;
  }
}
