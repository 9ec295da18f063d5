// editor-presence.js — others in the document: their carets and selections in
// a text, their names on the boxes they are in.

import { scalars } from "./rewind.js";

const peerColors = ["#e67e22", "#8e44ad", "#16a085", "#c0392b", "#2980b9", "#7f8c8d"];
export const colorOf = (name) => peerColors[[...name].reduce((a, c) => a + c.codePointAt(0), 0) % peerColors.length];

/** Others' carets in node `id` (a text of `length` code points), in order: {at, end, name, color}. */
export function caretMarks(presence, id, length) {
  const marks = [];
  for (const p of presence.values()) {
    if (p.node !== id || !p.selection) continue;
    marks.push({ at: Math.min(p.selection.start, length), end: Math.min(p.selection.end, length), name: p.user, color: colorOf(p.user) });
  }
  return marks.sort((a, b) => a.at - b.at);
}

/** Who is in node `id`: their names and the first one's color (null: nobody). */
export function peersIn(presence, id) {
  const here = [...presence.values()].filter((p) => p.node === id);
  return here.length ? { names: here.map((p) => p.user).join(", "), color: colorOf(here[0].user) } : null;
}

/** Others' carets and selections, drawn in a transparent copy of the text behind the textarea. */
export function fillMirror(mirror, presence, id, text) {
  const points = scalars(text);
  let at = 0;
  for (const m of caretMarks(presence, id, points.length)) {
    mirror.append(points.slice(at, m.at).join(""));
    const caret = document.createElement("span");
    caret.className = "caret";
    caret.dataset.name = m.name;
    caret.style.setProperty("--peer", m.color);
    mirror.append(caret);
    if (m.end > m.at) {
      const sel = document.createElement("span");
      sel.className = "sel";
      sel.style.setProperty("--peer", m.color);
      sel.textContent = points.slice(m.at, m.end).join("");
      mirror.append(sel);
      at = m.end;
    } else at = m.at;
  }
  mirror.append(points.slice(at).join(""));
}

export function markPeers(box, presence, id) {
  const here = peersIn(presence, id);
  if (!here) return;
  box.classList.add("focused-by-other");
  box.style.setProperty("--peer", here.color);
  const tag = document.createElement("span");
  tag.className = "peer-name";
  tag.textContent = here.names;
  box.append(tag);
}
