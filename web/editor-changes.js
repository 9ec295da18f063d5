// editor-changes.js — "Your changes": your undo groups in this document, newest
// first, as the server keeps them (`history`: durable, across reloads and
// devices), and what redo would bring back. Choosing one undoes (or redoes)
// everything down to it, one group at a time, as Undo would.

import { $, act, page } from "./editor-page.js";

/** The history reply as the panel lists it: [{title, steps}] (steps: how many undos or redos reach it). */
export function changeRows(groups, verb) {
  return (groups ?? []).map((g, i) => ({ title: `${verb === "undo" ? "Undo" : "Redo"} ${g.action || "Edit"}`, steps: i + 1, version: g.version }));
}

let timer = null;

export const changesOpen = () => !$("changes").classList.contains("hidden");

/** Reads the history again soon (several changes in a row read it once). */
export function refreshChanges() {
  if (!changesOpen() || !page.client?.doc) return;
  clearTimeout(timer);
  timer = setTimeout(load, 250);
}

async function load() {
  let h;
  try { h = await page.client.request("history", { doc: page.client.doc }); } catch { return; }
  fill($("undo-list"), changeRows(h.undo, "undo"), "undo");
  fill($("redo-list"), changeRows(h.redo, "redo"), "redo");
}

function fill(list, rows, verb) {
  list.replaceChildren();
  if (!rows.length) {
    list.innerHTML = `<li class="none">Nothing to ${verb}</li>`;
    return;
  }
  for (const row of rows) {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.textContent = row.title;
    b.title = `${verb === "undo" ? "Undo" : "Redo"} back to here (${row.steps} step${row.steps === 1 ? "" : "s"})`;
    b.setAttribute("aria-label", `${row.title}: ${b.title}`);
    b.addEventListener("click", () => act(async () => {
      for (let i = 0; i < row.steps; i++) await (verb === "undo" ? page.client.undo() : page.client.redo());
      refreshChanges();
    }));
    li.append(b);
    list.append(li);
  }
}

export function installChanges() {
  $("changes-toggle").addEventListener("click", () => {
    const open = $("changes").classList.toggle("hidden") === false;
    $("changes-toggle").setAttribute("aria-expanded", String(open));
    if (open) load();
  });
}
