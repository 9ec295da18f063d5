// editor-start.js — the home screen's quick actions (`shortcuts`), peek and
// pop, and opening a document by its id.

import { Doc } from "./rewind.js";
import { $, page } from "./editor-page.js";
import { go } from "./editor-route.js";

/** A quick action's card: its icon, title and subtitle. */
export function shortcutCard(item) {
  return {
    icon: item.icon === "compose" ? "✎" : "▤",
    title: item.title,
    subtitle: item.subtitle ? "last edited by " + item.subtitle : item.type === "open_document" ? "document" : "",
  };
}

/** A peeked document's preview: its id and version, then the text of each node that has some. */
export function peekText(doc, r) {
  const d = Doc.fromState(r.state);
  const texts = [...d.nodes.values()].filter((n) => n.text.length).map((n) => n.text.join(""));
  return `${doc} · version ${r.version}\n\n` + (texts.join("\n") || "(no text)");
}

/** A preview's actions offered besides Pop: not `open` (Pop is), not those asking more (sharing needs a user name: not offered here). */
export const peekActions = (actions) => actions.filter((a) => a.id !== "open" && !a.actions);

export function renderShortcuts() {
  const list = $("shortcuts");
  list.replaceChildren();
  for (const item of page.client?.shortcuts ?? []) {
    const card = shortcutCard(item);
    const b = document.createElement("button");
    b.className = "shortcut";
    b.setAttribute("role", "listitem");
    b.innerHTML = `<span class="icon" aria-hidden="true">${card.icon}</span><span class="title"></span><span class="subtitle"></span>`;
    b.querySelector(".title").textContent = card.title;
    b.querySelector(".subtitle").textContent = card.subtitle;
    b.addEventListener("click", () => runShortcut(item));
    if (item.type === "open_document") {
      let timer = null;
      const hold = () => { timer = setTimeout(() => peek(item.info.doc), 500); };
      const release = () => clearTimeout(timer);
      b.addEventListener("pointerdown", hold);
      b.addEventListener("pointerup", release);
      b.addEventListener("pointerleave", release);
      b.addEventListener("mouseenter", () => { timer = setTimeout(() => peek(item.info.doc), 700); });
      b.addEventListener("keydown", (e) => { if (e.key === " " && e.shiftKey) { e.preventDefault(); peek(item.info.doc); } });
      b.dataset.doc = item.info.doc;
    }
    list.append(b);
  }
}

async function runShortcut(item) {
  try {
    if (item.type === "new_document") {
      const r = await page.client.shortcut(item);
      await go(r.doc);
    } else {
      await go(item.info.doc);
    }
  } catch (e) { $("signin-error").textContent = e.message; }
}

async function peek(doc) {
  if (!$("peek").classList.contains("hidden")) return;
  let r;
  try { r = await page.client.peek(doc); } catch (e) { return; }
  $("peek-preview").textContent = peekText(doc, r);
  const actions = $("peek-actions");
  actions.replaceChildren();
  const add = (title, style, run) => {
    const b = document.createElement("button");
    b.textContent = title;
    if (style) b.className = style;
    b.addEventListener("click", run);
    actions.append(b);
  };
  add("Pop (open)", "", async () => {
    closePeek();
    await page.client.pop(r.preview);
    await go(doc);   // opening what pop opened again is harmless (PROTOCOL: `open`)
  });
  for (const a of peekActions(r.actions)) {
    add(a.title, a.style, async () => { closePeek(); try { await page.client.request("preview_action", { preview: r.preview, action: a.id }); } catch (e) { $("signin-error").textContent = e.message; } });
  }
  add("Cancel", "cancel", closePeek);
  $("peek").classList.remove("hidden");
  actions.querySelector("button").focus();
}

export function closePeek() { $("peek").classList.add("hidden"); }

export function installStart() {
  $("peek").addEventListener("click", (e) => { if (e.target.id === "peek") closePeek(); });
  $("open-by-id").addEventListener("submit", (e) => { e.preventDefault(); go(new FormData(e.target).get("doc")); });
}
