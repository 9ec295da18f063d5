// local-document.js — this terminal's copy of a document: the server's state plus
// the edits not yet committed (LocalDocument.swift).

import { Doc } from "./doc.js";
import { count, mapThroughRemove, transform } from "./transform.js";

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
    this.inFlight = null;   // {tx, base, ops (as sent), current (transformed since), action?}
    this.buffered = [];
    this.actions = [];      // each buffered segment's undo name (null: the server names it), in step with `buffered`
    this.txs = [];          // each buffered segment's tx once it has one (`seal`), in step with `buffered`
    this.sealed = false;    // the last segment is named or kept: the next edit starts another
    this.selection = null;  // {node, start, end} in view positions
  }

  get isSettled() { return !this.inFlight && this.buffered.length === 0; }

  reset(doc, version) {
    this.confirmed = doc;
    this.version = version;
    this.inFlight = null;
    this.buffered = [];
    this.actions = [];
    this.txs = [];
    this.view = doc.clone();
    this.clampSelection();
  }

  /**
   * A local edit, shown at once (throws, changing nothing, when it does not apply to the view).
   * With `action` it is a submit (an undo group) of its own, by that name ("Move").
   */
  edit(ops, newSegment = false, action = null) {
    this.view.applyAll(ops);
    if (newSegment || action || this.sealed || this.buffered.length === 0) {
      this.buffered.push([...ops]);
      this.actions.push(action);
      this.txs.push(null);
    } else this.buffered[this.buffered.length - 1].push(...ops);
    this.sealed = !!action;
  }

  /**
   * Gives every buffered segment a tx (`makeTx()`) and closes the last, so that
   * what is kept (offline.js) is exactly what will be sent under each tx: a
   * copy restored after a reload sends the same transactions, committed once.
   */
  seal(makeTx) {
    for (let i = 0; i < this.buffered.length; i++) this.txs[i] ??= makeTx();
    if (this.buffered.length) this.sealed = true;
  }

  /** The next submit, when none is in flight (null: nothing to send). */
  nextSubmit(tx) {
    if (this.inFlight || this.buffered.length === 0) return null;
    const ops = this.buffered.shift();
    const action = this.actions.shift() ?? null;
    tx = this.txs.shift() ?? tx;
    if (this.buffered.length === 0) this.sealed = false;
    if (ops.length === 0) return null;
    this.inFlight = { tx, base: this.version, ops, current: ops, ...(action ? { action } : {}) };
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
    if (!this.inFlight && own && tx && tx === this.txs[0]) {
      // Sent by this page before a reload, and kept as not sent (offline.js): committed, so no longer pending.
      this.buffered.shift();
      this.actions.shift();
      this.txs.shift();
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
    this.actions = [];
    this.txs = [];
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
