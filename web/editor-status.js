// editor-status.js — what the client's "change" events redraw, and the
// connection's state, always in view.

import { $, page } from "./editor-page.js";
import { renderShortcuts } from "./editor-start.js";
import { render } from "./editor-document.js";
import { renderPrompts } from "./editor-prompts.js";
import { renderTitle } from "./editor-title.js";
import { renderPeople } from "./editor-share.js";
import { refreshChanges } from "./editor-changes.js";
import { waiting } from "./offline.js";

/** The status line: connected, reconnecting or offline, and how many changes wait to be sent (`pending`). */
export function statusText(status, pending) {
  // Connected, changes leave at once: counting them then would flicker with every key.
  const unsent = pending && (status === "reconnecting" || status === "offline" || status === "connecting") ? ` — ${pending} change${pending === 1 ? "" : "s"} waiting to be sent, kept on this device` : "";
  const state = status === "ready" ? "connected" : status === "reconnecting" ? "reconnecting…" : status;
  return state + unsent;
}

/** The connection's state, always in view: connected, reconnecting or offline, and how many changes wait. */
function renderStatus() {
  const client = page.client;
  $("status").className = client.status;
  $("status").textContent = statusText(client.status, client.loaded ? waiting(client.document) : 0);
}

/** A "change" event of the client (`kind`: its detail): what it changed is drawn again. */
export function changed(kind) {
  if (kind === "status" || kind === "document") renderStatus();
  if (kind === "shortcuts" && !$("start").classList.contains("hidden")) renderShortcuts();
  if (kind === "document" || kind === "presence" || kind === "promptState") { if (!$("editor").classList.contains("hidden")) render(); }
  if (kind === "prompts") renderPrompts();
  if (kind === "title") renderTitle();
  if (kind === "presence") renderPeople();
  if ((kind === "promptState" || kind === "document") && !$("editor").classList.contains("hidden")) refreshChanges();
  if (kind === "failed" && page.client.lastError) $("error").textContent = page.client.lastError.message;
}
