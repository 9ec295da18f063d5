// editor-document.js — the document view: the node tree drawn as boxes at their
// frames, text nodes edited in place, this terminal's caret kept where the copy
// says it is.

import { Doc } from "./rewind.js";
import { $, page } from "./editor-page.js";
import { diffOps, shapeOf, toPoints, toUnits } from "./editor-text.js";
import { fillMirror, markPeers } from "./editor-presence.js";
import { renderPromptState } from "./editor-prompts.js";
import { loadInfo, renderTitle } from "./editor-title.js";
import { renderPeople } from "./editor-share.js";
import { boxDrawn } from "./editor-boxes.js";
import { restoreInto } from "./offline.js";
import { offerMotionPermission } from "./editor-keys.js";

/** What a node is called on the page: its `title` prop, else what it is ("Text", "Box"). */
export const nodeName = (n) => (typeof n.props?.title === "string" && n.props.title) || (n.kind === "text" ? "Text" : "Box");

function showEditor() {
  offerMotionPermission();
  $("start").classList.add("hidden");
  $("editor").classList.remove("hidden");
  $("home").classList.remove("hidden");
  $("error").textContent = "";
  page.scrub = null;
  page.drawnShape = null;
  $("scrubber").classList.add("hidden");
}

/** A document restored from kept edits before the server answered: drawn from what was kept (the sign-in's route reads its title later). */
export function showKept() {
  showEditor();
  renderTitle();
  render();
}

/** Opens `doc`: its kept edits if this browser has some (caught up and sent once connected), else fresh. */
export async function openDocument(doc) {
  showEditor();
  const client = page.client;
  const fresh = client.doc !== doc || !client.loaded;
  const waiting = fresh ? await page.kept?.load(client.helloUser, doc).catch(() => null) : null;
  // Started in this order, the open first: it names the client's document at once, which the title's answer checks.
  const opening = !fresh ? Promise.resolve()
    : waiting ? (restoreInto(client, waiting), client.status === "ready" ? client.reopen() : Promise.resolve())
    : client.open(doc);
  const info = loadInfo(doc);
  try { await opening; } catch (e) { $("error").textContent = e.code === "not_found" ? `No document “${doc}” that you can open.` : e.message; }
  await info;
  render();
  renderPeople();
}

export function render() {
  const { client, scrub } = page;
  const canvas = $("canvas");
  const doc = scrub ? Doc.fromState(scrub.state) : client.document.view;
  const shape = shapeOf(doc, !!scrub);
  if (shape === page.drawnShape) return update(doc);
  page.drawnShape = shape;
  document.body.classList.toggle("scrubbing", !!scrub);
  $("scrub-banner").classList.toggle("hidden", !scrub);
  const active = document.activeElement?.dataset?.node;
  const activeBox = document.activeElement?.classList?.contains("node");
  const keep = new Map([...canvas.querySelectorAll("textarea")].map((t) => [t.dataset.node, t]));
  canvas.replaceChildren();
  let bottom = 0;
  const draw = (id, into, ox, oy) => {
    const n = doc.get(id);
    for (const childID of n.children) {
      const c = doc.get(childID);
      const [x, y, w, h] = c.frame.map(Number);
      const box = document.createElement("div");
      box.className = "node" + (c.clips ? " clips" : "");
      box.dataset.node = childID;
      Object.assign(box.style, { left: x + "px", top: y + "px", width: Math.max(w, 8) + "px", height: Math.max(h, 8) + "px" });
      bottom = Math.max(bottom, oy + y + h + 40);
      const label = document.createElement("span");
      label.className = "label";
      label.textContent = nodeName(c);
      box.append(label);
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", nodeName(c));
      if (c.kind === "text") box.append(textBox(childID, c, keep.get(childID)));
      boxDrawn(box, childID);
      markPeers(box, client.presence, childID);
      into.append(box);
      draw(childID, box, ox + x, oy + y);
    }
  };
  draw("root", canvas, 0, 0);
  canvas.style.height = Math.max(bottom, 300) + "px";
  if (active) canvas.querySelector(`${activeBox ? ".node" : "textarea"}[data-node="${CSS.escape(active)}"]`)?.focus({ preventScroll: true });
  restoreCaret();
  renderPromptState();
  $("history").disabled = !scrub && client.document.version === 0;   // nothing to go back to yet
}

/** Same shape: each text box's text, others' carets, and who is where; the DOM stays (and so does the focus). */
function update(doc) {
  const presence = page.client.presence;
  for (const ta of $("canvas").querySelectorAll("textarea")) {
    const id = ta.dataset.node;
    const text = doc.get(id).text.join("");
    if (ta.value !== text) ta.value = text;
    ta.dataset.shown = text;
    const mirror = ta.parentElement.querySelector(".mirror");
    mirror.replaceChildren();
    fillMirror(mirror, presence, id, text);
  }
  for (const box of $("canvas").querySelectorAll(".node")) {
    box.classList.remove("focused-by-other");
    box.querySelector(":scope > .peer-name")?.remove();
    markPeers(box, presence, box.dataset.node);
  }
  restoreCaret();
  renderPromptState();
}

function textBox(id, node, reuse) {
  const wrap = document.createElement("div");
  wrap.className = "textbox";
  const mirror = document.createElement("div");
  mirror.className = "mirror";
  mirror.setAttribute("aria-hidden", "true");
  const ta = reuse ?? document.createElement("textarea");
  ta.dataset.node = id;
  ta.setAttribute("aria-label", nodeName(node));
  ta.readOnly = !!page.scrub;
  const text = node.text.join("");
  if (ta.value !== text) ta.value = text;
  ta.dataset.shown = text;
  if (!reuse) {
    ta.addEventListener("input", () => typed(ta));
    ta.addEventListener("focus", () => { if (!page.scrub) page.client.focus(ta.dataset.node).catch(() => {}); });
    ta.addEventListener("select", () => sendSelection(ta));
    ta.addEventListener("keyup", (e) => { if (e.key.startsWith("Arrow") || e.key === "Home" || e.key === "End") sendSelection(ta); });
    ta.addEventListener("mouseup", () => sendSelection(ta));
  }
  fillMirror(mirror, page.client.presence, id, text);
  wrap.append(ta, mirror);   // the carets drawn over the text
  return wrap;
}

/** The textarea changed: the difference with what it showed becomes a remove and an insert (code points). */
function typed(ta) {
  const client = page.client;
  const id = ta.dataset.node;
  const ops = diffOps(id, ta.dataset.shown, ta.value);
  if (!ops.length) return;
  const caret = toPoints(ta.value, ta.selectionEnd);
  client.document.selection = { node: id, start: caret, end: caret };
  try {
    client.edit(ops);
  } catch (e) {
    $("error").textContent = e.message;
    render();
  }
  selectionSoon(ta);
}

/** Others see where this terminal's caret went once its typing is committed (a pause of 150 ms, not every key). */
let selectionTimer = null;
function selectionSoon(ta) {
  clearTimeout(selectionTimer);
  selectionTimer = setTimeout(() => page.client.settle().then(() => { if (document.activeElement === ta) sendSelection(ta); }), 150);
}

function sendSelection(ta) {
  if (page.scrub) return;
  const client = page.client;
  const id = ta.dataset.node;
  const start = toPoints(ta.value, ta.selectionStart), end = toPoints(ta.value, ta.selectionEnd);
  client.document.selection = { node: id, start, end };
  if (client.settled) client.select(id, start, end).catch(() => {});
}

/** After a re-render: this terminal's caret where the copy says it is (moved through others' edits). */
function restoreCaret() {
  const s = page.client?.document.selection;
  if (!s || page.scrub) return;
  const ta = $("canvas").querySelector(`textarea[data-node="${CSS.escape(s.node)}"]`);
  if (!ta || document.activeElement !== ta) return;
  ta.setSelectionRange(toUnits(ta.value, s.start), toUnits(ta.value, s.end));
}
