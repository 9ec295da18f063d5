// editor-page.js — what the editor's modules share: the page's state and the
// error line.

export const $ = (id) => document.getElementById(id);

/** The page's state: the client (one per sign-in), the history slider's version while it is out, the tree shape drawn. */
export const page = {
  client: null,
  scrub: null,        // {version, state} while the history slider is out
  drawnShape: null,
  shown: null,        // what the page shows: a document's id, or "" for home (editor-route.js)
  shownFor: null,     // the client it was shown for (a new sign-in shows it again)
  role: null,         // the caller's role on the open document (doc_info)
  kept: null,         // this browser's unsent edits (offline.js KeptEdits, set by editor-signin.js)
};

/** Runs a request the user asked for; its error goes to the error line. */
export async function act(run) {
  $("error").textContent = "";
  try { await run(); } catch (e) { $("error").textContent = e.message; }
}
