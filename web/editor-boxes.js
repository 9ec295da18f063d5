// editor-boxes.js — boxes by mouse and keyboard: a click selects a box; dragging
// it moves it, dragging its corner grip resizes it, each one undo group ("Move",
// "Resize") sent as one `set frame` when the mouse is let go. A selected box
// moves with the arrow keys (Shift: 1 px) and resizes with Alt+arrows.

import { $, page } from "./editor-page.js";

/** A frame moved by (dx, dy) or, resizing, grown by them (at least 16 × 16); whole pixels. */
export function dragged(frame, dx, dy, resizing) {
  const [x, y, w, h] = frame.map(Number);
  return resizing ? [x, y, Math.max(16, Math.round(w + dx)), Math.max(16, Math.round(h + dy))]
    : [Math.max(0, Math.round(x + dx)), Math.max(0, Math.round(y + dy)), w, h];
}

/** What an arrow key does to a selected box: {dx, dy, resizing} (null: not an arrow). */
export function arrowStep(e) {
  const step = e.shiftKey ? 1 : 10;
  const d = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] }[e.key];
  return d ? { dx: d[0], dy: d[1], resizing: !!e.altKey } : null;
}

const mayEdit = () => page.role === "owner" || page.role === "editor";

function commit(node, frame, resizing) {
  const n = page.client.document.view.get(node);
  if (!n || n.frame.map(Number).join() === frame.join()) return;
  try {
    page.client.edit([{ op: "set", node, key: "frame", value: frame }], { action: resizing ? "Resize" : "Move" });
  } catch (e) { $("error").textContent = e.message; }
}

export function select(node) {
  page.selectedBox = node;
  for (const b of $("canvas").querySelectorAll(".node.selected")) b.classList.remove("selected");
  const box = node && $("canvas").querySelector(`.node[data-node="${CSS.escape(node)}"]`);
  box?.classList.add("selected");
}

/** A box drawn (editor-document.js): its grip and what the mouse and keys do to it. */
export function boxDrawn(box, id) {
  box.tabIndex = page.scrub ? -1 : 0;
  if (page.selectedBox === id) box.classList.add("selected");
  if (mayEdit() && !page.scrub) {
    const grip = document.createElement("span");
    grip.className = "grip";
    grip.setAttribute("aria-hidden", "true");
    box.append(grip);
  }
}

let drag = null;   // {node, start: [px, py], frame, resizing, moved}

function pointerDown(e) {
  if (page.scrub || e.button !== 0) return;
  const box = e.target.closest?.(".node");
  if (!box || e.target.closest("textarea")) return;
  e.stopPropagation();
  select(box.dataset.node);
  box.focus({ preventScroll: true });
  if (!mayEdit()) return;
  const n = page.client.document.view.get(box.dataset.node);
  drag = { node: box.dataset.node, start: [e.clientX, e.clientY], frame: n.frame, resizing: e.target.classList.contains("grip"), moved: false };
  e.preventDefault();
}

function pointerMove(e) {
  if (!drag) return;
  const dx = e.clientX - drag.start[0], dy = e.clientY - drag.start[1];
  if (Math.abs(dx) + Math.abs(dy) >= 2) drag.moved = true;
  const [x, y, w, h] = dragged(drag.frame, dx, dy, drag.resizing);
  const box = $("canvas").querySelector(`.node[data-node="${CSS.escape(drag.node)}"]`);
  if (box) Object.assign(box.style, { left: x + "px", top: y + "px", width: w + "px", height: h + "px" });
}

function pointerUp(e) {
  if (!drag) return;
  const d = drag;
  drag = null;
  if (d.moved) commit(d.node, dragged(d.frame, e.clientX - d.start[0], e.clientY - d.start[1], d.resizing), d.resizing);
}

function keyDown(e) {
  const box = e.target.closest?.(".node");
  if (!box || e.target !== box || page.scrub || !mayEdit()) return;
  const step = arrowStep(e);
  if (!step) return;
  e.preventDefault();
  const n = page.client.document.view.get(box.dataset.node);
  if (n) commit(box.dataset.node, dragged(n.frame, step.dx, step.dy, step.resizing), step.resizing);
}

export function installBoxes() {
  const canvas = $("canvas");
  canvas.addEventListener("pointerdown", pointerDown);
  window.addEventListener("pointermove", pointerMove);
  window.addEventListener("pointerup", pointerUp);
  canvas.addEventListener("keydown", keyDown);
  canvas.addEventListener("pointerdown", (e) => { if (e.target === canvas) select(null); });
}
