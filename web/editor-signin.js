// editor-signin.js — signing in and out. A sign-in is remembered for the tab
// (sessionStorage: a reload keeps it, closing the tab forgets it) and never left
// in the URL: a link's fragment (#user=…&token=…, or #jwt=… with a token an
// app's backend signed) is read once, then replaced by what it opens (#doc=…).

import { RewindClient } from "./rewind.js";
import { KeptEdits, restoreInto } from "./offline.js";
import { $, page } from "./editor-page.js";
import { changed } from "./editor-status.js";
import { docIn, route } from "./editor-route.js";
import { showKept } from "./editor-document.js";

/** This browser's unsent edits, per user and document (IndexedDB). */
export const kept = new KeptEdits();
page.kept = kept;

const KEY = "rewind.signin";

/** A URL fragment's fields (`hash` with its `#`). */
export function params(hash) { return Object.fromEntries(new URLSearchParams(hash.slice(1))); }

/** The fragment without what signs in (`user`, `token`, `jwt`): what stays in the address bar and the history. */
export function withoutCredentials(hash) {
  const p = new URLSearchParams(hash.slice(1));
  for (const k of ["user", "token", "jwt"]) p.delete(k);
  const rest = p.toString();
  return rest ? "#" + rest : "";
}

/** Credentials in `hash` ({user?, token} or null), as a link carries them. */
export function credentialsIn(hash) {
  const p = params(hash);
  if (p.user && p.token) return { user: p.user, token: p.token };
  if (p.jwt) return { token: p.jwt };
  return null;
}

/** A signed token's `sub`, read without checking it (only to find this browser's kept edits before the server answers). */
export function jwtSubject(token) {
  try { return JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub ?? null; } catch { return null; }
}

function remembered(storage) {
  try { return JSON.parse(storage.getItem(KEY)); } catch { return null; }
}

/** The page's start: a link's credentials (taken out of the URL at once), else the tab's, else the form. */
export function signInFromPage() {
  const fromLink = credentialsIn(location.hash);
  if (fromLink) history.replaceState(null, "", location.pathname + location.search + withoutCredentials(location.hash));
  const creds = fromLink ?? remembered(sessionStorage);
  if (creds) signIn(creds.user, creds.token);
}

export async function signIn(user, token) {
  page.client?.stop();
  // A random client id (rewind.js makes one): never the user's name, which would stay in the log past an erase.
  // `user` may be left out with a signed token: the server takes it from the token's `sub`.
  const client = new RewindClient({ ...(user ? { user } : {}), token });
  page.client = client;
  client.addEventListener("change", (e) => changed(e.detail));
  kept.attach(client);
  $("signin-error").textContent = "";
  $("signin").classList.add("hidden");   // back with the reason if the server refuses
  // Edits kept from before a reload are shown at once, even with the server away; the hello sends them.
  const waiting = await kept.load(user ?? jwtSubject(token), docIn(location.hash)).catch(() => null);
  if (waiting && page.client === client) {
    restoreInto(client, waiting);
    $("who").textContent = user ?? waiting.user;
    showKept();
  }
  try {
    await client.start();
  } catch (e) {
    if (page.client === client) page.client = null;
    sessionStorage.removeItem(KEY);
    $("signin").classList.remove("hidden");
    $("signin-error").textContent = e.message;
    return;
  }
  sessionStorage.setItem(KEY, JSON.stringify({ ...(user ? { user } : {}), token }));
  $("who").textContent = user ?? client.helloUser ?? "";
  $("signin").classList.add("hidden");
  $("sign-out").classList.remove("hidden");
  await route();
}

export async function signOut() {
  const me = page.client?.helloUser;
  const unsent = me ? await kept.documents(me) : [];
  if (unsent.length && !confirm(`Changes to ${unsent.length} document(s) are not sent yet and will be lost. Sign out anyway?`)) return;
  for (const doc of unsent) await kept.forget(me, doc);
  page.client?.stop();
  page.client = null;
  sessionStorage.removeItem(KEY);
  history.replaceState(null, "", location.pathname + location.search);
  for (const id of ["start", "editor", "home", "sign-out"]) $(id).classList.add("hidden");
  $("who").textContent = "";
  $("status").textContent = "not connected";
  $("status").className = "";
  $("signin").classList.remove("hidden");
}

export function installSignIn() {
  $("signin-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    signIn(f.get("user"), f.get("token"));
  });
  $("sign-out").addEventListener("click", signOut);
  // Back, forward, a link within the page: what the address names is shown; a link that
  // signs in (another #user=… or #jwt=…) signs in again first, and leaves the URL too.
  window.addEventListener("hashchange", () => (credentialsIn(location.hash) ? signInFromPage() : route()));
}
