// editor-signin.js — signing in: the form, or a URL fragment #user=…&token=…&doc=…
// that signs in and opens a document (for tests and demos), or #jwt=… with a token an
// app's backend signed (the user is the token's).

import { RewindClient } from "./rewind.js";
import { $, page } from "./editor-page.js";
import { changed } from "./editor-status.js";
import { openDocument } from "./editor-document.js";
import { showStart } from "./editor-start.js";

/** A URL fragment's fields (`hash` with its `#`). */
export function params(hash) { return Object.fromEntries(new URLSearchParams(hash.slice(1))); }

export async function signIn(user, token, doc) {
  page.client?.stop();
  // A random client id (rewind.js makes one): never the user's name, which would stay in the log past an erase.
  // `user` may be left out with a signed token: the server takes it from the token's `sub`.
  const client = new RewindClient({ ...(user ? { user } : {}), token });
  page.client = client;
  client.addEventListener("change", (e) => changed(e.detail));
  $("signin-error").textContent = "";
  try {
    await client.start();
  } catch (e) {
    $("signin-error").textContent = e.message;
    return;
  }
  $("who").textContent = user ?? client.helloUser ?? "";
  $("signin").classList.add("hidden");
  if (doc) await openDocument(doc); else showStart();
}

export function installSignIn() {
  $("signin-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    signIn(f.get("user"), f.get("token"));
  });
}
