// editor-library.js — the home screen: your documents (owned and shared with
// you, newest edit first, with who edited last), a new one made with a title,
// the recently deleted brought back; and deleting the open one, with Undo.

import { $, page } from "./editor-page.js";
import { renderShortcuts } from "./editor-start.js";
import { go } from "./editor-route.js";

/** How long ago `iso` was, as a person says it ("just now", "5 minutes ago", "3 days ago"), from `now` (ms). */
export function ago(iso, now = Date.now()) {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  const units = [["year", 31536000], ["month", 2592000], ["day", 86400], ["hour", 3600], ["minute", 60]];
  for (const [name, size] of units) {
    const n = Math.floor(s / size);
    if (n >= 1) return `${n} ${name}${n === 1 ? "" : "s"} ago`;
  }
  return "just now";
}

/** A listed document's row: its title ("Untitled" without one), and what is said under it. */
export function docRow(d, me, now = Date.now()) {
  const by = d.last_editor ? (d.last_editor.user === me ? "you" : d.last_editor.name) : null;
  const when = ago(d.edited, now);
  return {
    title: d.title || "Untitled",
    meta: by ? `edited ${when} by ${by}` : `created ${when}`,
    badge: d.role === "owner" ? null : `${d.owner}'s · ${d.role === "viewer" ? "can view" : "can edit"}`,
  };
}

let listed = { next: null };

export function showStart() {
  page.client?.closeDocument();
  page.scrub = null;
  $("editor").classList.add("hidden");
  $("home").classList.add("hidden");
  $("start").classList.remove("hidden");
  document.title = "Rewind";
  renderShortcuts();
  loadDocuments();
  loadDeleted();
}

async function loadDocuments(after = null) {
  const list = $("doc-list");
  list.setAttribute("aria-busy", "true");
  let r;
  try { r = await page.client.listDocuments({ limit: 50, ...(after ? { after } : {}) }); } catch (e) {
    $("signin-error").textContent = e.message;
    return;
  }
  if (!after) list.replaceChildren();
  const me = page.client.helloUser;
  for (const d of r.docs) {
    const row = docRow(d, me);
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.className = "doc-row";
    b.dataset.doc = d.doc;
    b.innerHTML = `<span class="title"></span><span class="badge"></span><span class="meta"></span>`;
    b.querySelector(".title").textContent = row.title;
    b.querySelector(".meta").textContent = row.meta;
    if (row.badge) b.querySelector(".badge").textContent = row.badge; else b.querySelector(".badge").remove();
    b.addEventListener("click", () => go(d.doc));
    li.append(b);
    list.append(li);
  }
  if (!list.children.length) list.innerHTML = `<li class="empty">No documents yet: make one with New document.</li>`;
  listed = { next: r.next ?? null };
  $("more-docs").classList.toggle("hidden", !listed.next);
  // A deployment on several PostgreSQL clusters: one cannot be reached, and its documents are missing.
  if (!after || r.unreachable_shards) $("docs-incomplete").classList.toggle("hidden", !r.unreachable_shards?.length);
  list.setAttribute("aria-busy", "false");
}

async function loadDeleted() {
  let r;
  try { r = await page.client.listDeleted(); } catch { return; }
  const list = $("deleted-list");
  list.replaceChildren();
  $("deleted-box").classList.toggle("hidden", r.docs.length === 0);
  for (const d of r.docs) {
    const li = document.createElement("li");
    li.innerHTML = `<span></span><button>Undelete</button>`;
    li.querySelector("span").textContent = `${d.title || "Untitled"} — deleted ${ago(d.deleted)}, until ${new Date(d.restorable_until).toLocaleDateString()}`;
    li.querySelector("button").setAttribute("aria-label", `Undelete ${d.title || "Untitled"}`);
    li.querySelector("button").addEventListener("click", () => undelete(d.doc, d.title));
    list.append(li);
  }
}

async function undelete(doc, title) {
  try {
    await page.client.undeleteDocument(doc);
    toast(`Restored “${title || "Untitled"}”.`, "Open", () => go(doc));
  } catch (e) { toast(e.message); }
  if (!$("start").classList.contains("hidden")) { loadDocuments(); loadDeleted(); }
}

/** Deletes the open document (the owner), goes home, and offers Undo for a while (then Recently deleted). */
export async function deleteOpen() {
  const doc = page.client.doc, title = page.client.title;
  try { await page.client.deleteDocument(doc); } catch (e) { $("error").textContent = e.message; return; }
  await go(null);
  toast(`Deleted “${title || "Untitled"}”.`, "Undo", () => undelete(doc, title));
}

let toastTimer = null;
/** A message at the bottom for 8 s, with one action (optional). */
export function toast(text, action, run) {
  clearTimeout(toastTimer);
  $("toast-text").textContent = text;
  const b = $("toast-action");
  b.classList.toggle("hidden", !action);
  b.textContent = action ?? "";
  b.onclick = () => { $("toast").classList.add("hidden"); run?.(); };
  $("toast").classList.remove("hidden");
  toastTimer = setTimeout(() => $("toast").classList.add("hidden"), 8000);
}

async function createDocument(title) {
  try {
    const r = await page.client.createDocument({ title });
    $("new-doc-form").classList.add("hidden");
    $("new-doc").setAttribute("aria-expanded", "false");
    await go(r.doc);
  } catch (e) { $("signin-error").textContent = e.message; }
}

export function installLibrary() {
  $("new-doc").addEventListener("click", () => {
    const form = $("new-doc-form");
    form.classList.remove("hidden");
    $("new-doc").setAttribute("aria-expanded", "true");
    form.elements.title.value = "";
    form.elements.title.focus();
  });
  $("new-doc-cancel").addEventListener("click", () => { $("new-doc-form").classList.add("hidden"); $("new-doc").setAttribute("aria-expanded", "false"); });
  $("new-doc-form").addEventListener("submit", (e) => { e.preventDefault(); createDocument(e.target.elements.title.value.trim()); });
  $("more-docs").addEventListener("click", () => loadDocuments(listed.next));
  $("delete-doc").addEventListener("click", deleteOpen);
  $("home").addEventListener("click", () => go(null));
}
