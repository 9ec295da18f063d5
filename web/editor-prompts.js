// editor-prompts.js — undo, redo and shake, and prompts: the Undo and Redo
// buttons titled from `prompt_state`, and the prompt shown as an alert.

import { $, act, page } from "./editor-page.js";

/** The Undo and Redo buttons from `prompt_state` (none yet: plain and disabled; both disabled while scrubbing). */
export function undoRedoButtons(ps, scrubbing) {
  return {
    undo: { disabled: !ps?.can_undo || scrubbing, text: ps?.can_undo ? ps.undo_title : "Undo" },
    redo: { disabled: !ps?.can_redo || scrubbing, text: ps?.can_redo ? ps.redo_title : "Redo" },
  };
}

export function renderPromptState() {
  const b = undoRedoButtons(page.client?.promptState, !!page.scrub);
  $("undo").disabled = b.undo.disabled;
  $("redo").disabled = b.redo.disabled;
  $("undo").textContent = b.undo.text;
  $("redo").textContent = b.redo.text;
  const mac = /Mac|iPhone|iPad/.test(globalThis.navigator?.platform ?? "");
  $("undo").title = `${b.undo.text} (${mac ? "⌘Z" : "Ctrl+Z"})`;
  $("redo").title = `${b.redo.text} (${mac ? "⇧⌘Z" : "Shift+Ctrl+Z"})`;
}

export const undo = () => act(() => page.client.undo());
export const redo = () => act(() => page.client.redo());
export const shake = () => act(() => page.client.shake());

/** The prompt shown: the newest alert, else the newest prompt (undefined: none). */
export const promptToShow = (prompts) => prompts.filter((p) => p.level === "alert").at(-1) ?? prompts.at(-1);

/** An alert's actions in the order shown: cancel apart and last. */
export const alertOrder = (actions) => [...actions.filter((a) => a.style !== "cancel"), ...actions.filter((a) => a.style === "cancel")];

/** Prompts as alerts (UIAlertController's look): title, message, actions; destructive in red, cancel apart and last. */
export function renderPrompts() {
  const host = $("alerts");
  host.replaceChildren();
  const p = promptToShow(page.client.prompts);
  if (!p) return;
  const backdrop = document.createElement("div");
  backdrop.className = "alert-backdrop";
  const alert = document.createElement("div");
  alert.className = "alert";
  alert.setAttribute("role", "alertdialog");
  alert.setAttribute("aria-modal", "true");
  alert.setAttribute("aria-labelledby", "alert-title");
  alert.innerHTML = `<div class="text"><h2 id="alert-title"></h2><p></p></div><div class="actions"></div>`;
  alert.querySelector("h2").textContent = p.title;
  alert.querySelector("p").textContent = p.message ?? "";
  const actions = alert.querySelector(".actions");
  for (const a of alertOrder(p.actions)) {
    const b = document.createElement("button");
    b.textContent = a.title;
    b.className = a.style;
    b.addEventListener("click", () => act(() => page.client.respond(p.id, a.id)));
    actions.append(b);
  }
  // Escape is the cancel action, as on every platform's alerts (the server dismisses it everywhere).
  const cancel = p.actions.find((a) => a.style === "cancel");
  alert.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && cancel) { e.preventDefault(); act(() => page.client.respond(p.id, cancel.id)); }
  });
  backdrop.append(alert);
  host.append(backdrop);
  actions.querySelector("button:not(.cancel)")?.focus() ?? actions.querySelector("button")?.focus();
}

export function installPrompts() {
  $("undo").addEventListener("click", undo);
  $("redo").addEventListener("click", redo);
  $("shake").addEventListener("click", shake);
}
