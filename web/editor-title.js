// editor-title.js — the open document's title (renamed in place by editors and
// the owner; `renamed` pushes bring others' renames) and what the caller's
// role allows: Share and Delete for the owner, a read-only title for viewers.

import { $, page } from "./editor-page.js";

/** The tab's title for a document's title. */
export const tabTitle = (title) => `${title || "Untitled"} — Rewind`;

/** What the toolbar offers a role: {rename, share, delete}. */
export function allowed(role) {
  return { rename: role === "owner" || role === "editor", share: role === "owner", delete: role === "owner" };
}

/** Reads the open document's title and the caller's role (`doc_info`), and shows them. */
export async function loadInfo(doc) {
  page.role = null;
  renderTitle();
  let info;
  try { info = await page.client.documentInfo(doc); } catch { return; }
  if (page.client.doc !== doc) return;
  page.client.title = info.title;
  page.role = info.role;
  renderTitle();
}

export function renderTitle() {
  const client = page.client, input = $("doc-title");
  const may = allowed(page.role);
  if (document.activeElement !== input) input.value = client?.title ?? "";
  input.readOnly = !may.rename;
  input.title = may.rename ? "Rename (Enter to save)" : "Only editors can rename";
  $("share").classList.toggle("hidden", !may.share);
  $("delete-doc").classList.toggle("hidden", !may.delete);
  document.title = tabTitle(client?.title);
}

async function rename() {
  const client = page.client, input = $("doc-title");
  const title = input.value.trim();
  if (!client?.doc || input.readOnly || title === (client.title ?? "")) return;
  try {
    const r = await client.rename(title);
    client.title = r.title;
  } catch (e) { $("error").textContent = e.message; }
  renderTitle();
}

export function installTitle() {
  const input = $("doc-title");
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); input.blur(); }
    if (e.key === "Escape") { input.value = page.client?.title ?? ""; input.blur(); }
  });
  input.addEventListener("blur", rename);
}
