// doc.js — the document model: a tree of nodes, ops applied as the server applies
// them. Positions in ops are Unicode scalars (code points), as on the wire; `Doc`
// keeps each node's text as an array of code points.

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
