// editor-history.js — the history slider (scrub): drag through the versions,
// read only, then Restore Version or Cancel.

import { $, act, page } from "./editor-page.js";
import { render } from "./editor-document.js";

/** The slider's value (0…100) as the `scrub` request's progress (0…1). */
export const progressOf = (value) => Number(value) / 100;

/** What the slider says: the version shown, of the head's, and what the ends are. */
export const scrubLabel = (shown, head) => `${shown} of ${head}` + (shown === 0 ? " (before the first edit)" : shown === head ? " (now)" : "");

async function scrubTo(progress) {
  try {
    const r = await page.client.scrub(progress);
    page.scrub = { version: r.version, state: r.state };
    $("scrub-version").textContent = scrubLabel(r.version, page.client.document.version);
    render();
  } catch (e) { $("error").textContent = e.message; }
}

async function cancelScrub() {
  if (!page.scrub) return;
  page.scrub = null;
  $("scrubber").classList.add("hidden");
  $("history").setAttribute("aria-expanded", "false");
  render();
  page.client.scrubCancel().catch(() => {});
}

export function installHistory() {
  $("history").addEventListener("click", () => {
    const open = $("scrubber").classList.toggle("hidden") === false;
    $("history").setAttribute("aria-expanded", String(open));
    if (open) { $("scrub").value = 100; scrubTo(1); } else cancelScrub();
  });
  $("scrub").addEventListener("input", () => scrubTo(progressOf($("scrub").value)));
  $("scrub-cancel").addEventListener("click", cancelScrub);
  $("restore").addEventListener("click", () => act(async () => {
    await page.client.scrubCommit();
    page.scrub = null;
    $("scrubber").classList.add("hidden");
    $("history").setAttribute("aria-expanded", "false");
    render();
  }));
}
