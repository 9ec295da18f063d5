// editor-route.js — the address names what is shown: #doc=<id> an open
// document, nothing the home screen. Going somewhere is a fragment change, so
// it is a history entry: back and forward move between documents and home,
// and a reload or a pasted link opens the same document.

import { page } from "./editor-page.js";
import { openDocument } from "./editor-document.js";
import { showStart } from "./editor-library.js";

/** The document a fragment names (null: home). */
export function docIn(hash) { return new URLSearchParams(hash.slice(1)).get("doc") || null; }

/** The fragment that names `doc` ("": home). */
export const hashFor = (doc) => (doc ? "#doc=" + encodeURIComponent(doc) : "");

/** Shows what the address names (once: a fragment change may be reported twice). Called on every
 * fragment change without credentials (editor-signin.js listens: a link with them signs in first). */
export async function route() {
  if (!page.client) return;
  const doc = docIn(location.hash);
  if (page.shown === (doc ?? "") && page.shownFor === page.client) return;
  page.shown = doc ?? "";
  page.shownFor = page.client;
  if (doc) await openDocument(doc);
  else showStart();
}

/** Goes to `doc` (null: home), as a new history entry (at once: the fragment's change only confirms it). */
export function go(doc) {
  const hash = hashFor(doc);
  if ((location.hash || "") !== hash && !(hash === "" && location.hash === "#")) location.hash = hash;
  return route();
}
