// offline.js — edits kept across a reload: while a document has edits not yet
// committed, this terminal's copy (the server's state at its version, the submit
// in flight with its `tx`, the edits buffered behind it) is kept in IndexedDB.
// Opened again — after a reload, even with the server away — the copy comes
// back as it was, and once connected it is caught up and its submits sent as a
// reconnect sends them: the same `tx`, so each is committed once.

import { Doc } from "./doc.js";
import { LocalDocument } from "./local-document.js";

/** Submits waiting to be sent (the one in flight and the buffered ones) of a LocalDocument. */
export const waiting = (d) => (d.inFlight ? 1 : 0) + d.buffered.filter((s) => s.length).length;

/** What is kept of `client`'s open document. */
export function keptRecord(client) {
  const d = client.document;
  return {
    user: client.helloUser ?? client.user, doc: client.doc, title: client.title ?? null, client: client.client, version: d.version, state: d.confirmed.toState(),
    inFlight: d.inFlight, buffered: d.buffered, actions: d.actions, txs: d.txs, savedAt: Date.now(),
  };
}

/** Makes a kept record `client`'s open document again (not yet caught up: the next hello or `reopen` does that). */
export function restoreInto(client, kept) {
  if (client.doc && client.doc !== kept.doc) client.closeDocument();
  client.doc = kept.doc;
  client.title = kept.title ?? null;
  const d = new LocalDocument();
  d.reset(Doc.fromState(kept.state), kept.version);
  d.inFlight = kept.inFlight;
  d.buffered = kept.buffered;
  d.actions = kept.actions ?? kept.buffered.map(() => null);
  d.txs = kept.txs ?? kept.buffered.map(() => null);
  d.rebuildView();
  client.document = d;
  client.formerClients.add(kept.client);
  client.loaded = true;
  client.emit("document");
}

/** A key–value store in IndexedDB (one object store); in memory where there is none (node, old browsers). */
export function openStore(name = "rewind-kept-edits") {
  if (!globalThis.indexedDB) {
    const m = new Map();
    return { get: async (k) => (m.has(k) ? structuredClone(m.get(k)) : null), put: async (k, v) => { m.set(k, structuredClone(v)); }, delete: async (k) => { m.delete(k); }, keys: async () => [...m.keys()] };
  }
  const db = new Promise((resolve, reject) => {
    const r = indexedDB.open(name, 1);
    r.onupgradeneeded = () => r.result.createObjectStore("kept");
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const run = (mode, f) => db.then((d) => new Promise((resolve, reject) => {
    const t = d.transaction("kept", mode);
    const r = f(t.objectStore("kept"));
    t.oncomplete = () => resolve(r.result);
    t.onerror = () => reject(t.error);
  }));
  return {
    get: (k) => run("readonly", (s) => s.get(k)).then((v) => v ?? null),
    put: (k, v) => run("readwrite", (s) => s.put(v, k)),
    delete: (k) => run("readwrite", (s) => s.delete(k)),
    keys: () => run("readonly", (s) => s.getAllKeys()),
  };
}

const keyOf = (user, doc) => `${user}\u0000${doc}`;

/**
 * Keeps a client's unsent edits (`attach`), and finds them again (`load`,
 * `documents`). Saved 300 ms after the last change (typing saves once a
 * pause, not each key), at once when the connection is lost, and when the
 * page is hidden; forgotten once everything is committed. Each save fixes the
 * tx of every segment it keeps (`LocalDocument.seal`), so a copy kept before
 * its segments were sent — and restored after they were — sends them again
 * under the same tx, and the server answers each with its first result.
 */
export class KeptEdits {
  constructor(store = openStore()) {
    this.store = store;
    this.timer = null;
    this.stored = new Set();   // keys this page wrote or found: the only ones a settled document deletes
  }

  attach(client) {
    const save = () => { clearTimeout(this.timer); this.timer = null; return this.save(client); };
    client.addEventListener("change", (e) => {
      if (e.detail === "status" && client.status !== "ready") save();
      else if (e.detail === "document" && client.loaded && client.document.isSettled) save();   // forgotten at once
      else if (e.detail === "document") { clearTimeout(this.timer); this.timer = setTimeout(save, 300); }
    });
    globalThis.addEventListener?.("pagehide", save);
    return this;
  }

  async save(client) {
    if (!client.loaded || !client.doc) return;
    const key = keyOf(client.helloUser ?? client.user, client.doc);
    if (client.document.isSettled) {
      if (!this.stored.delete(key)) return;
      return this.store.delete(key);
    }
    this.stored.add(key);
    // What is kept is sent as kept: each segment's tx fixed now, and typing goes on in a new one.
    client.document.seal(() => `${client.client}-${++client.sent}`);
    return this.store.put(key, keptRecord(client));
  }

  async load(user, doc) {
    if (!user || !doc) return null;
    const found = await this.store.get(keyOf(user, doc));
    if (found) this.stored.add(keyOf(user, doc));
    return found;
  }

  forget(user, doc) {
    this.stored.delete(keyOf(user, doc));
    return this.store.delete(keyOf(user, doc));
  }

  /** The documents `user` has kept edits of. */
  async documents(user) {
    return (await this.store.keys()).filter((k) => k.startsWith(user + "\u0000")).map((k) => k.slice(user.length + 1));
  }
}
