// offline-worker.js — the service worker that lets the editor open with the
// server away (a reload while offline shows the document and its kept edits,
// offline.js). Network first: while the server answers, every file comes from
// it (never a stale copy); only when it does not is the last copy served.
// PRECACHE is every file of web/ (Tests/Web/web-files.test.mjs checks it).

const CACHE = "rewind-web-v1";
const PRECACHE = [
  "/", "/client.js", "/connection.js", "/doc.js", "/editor-boxes.js", "/editor-changes.js", "/editor-document.js",
  "/editor-history.js", "/editor-keys.js", "/editor-library.js", "/editor-nodes.js", "/editor-page.js", "/editor-presence.js",
  "/editor-prompts.js", "/editor-route.js", "/editor-share.js", "/editor-signin.js", "/editor-start.js", "/editor-status.js",
  "/editor-text.js", "/editor-title.js", "/editor.js", "/library.js", "/local-document.js", "/offline.js", "/pushes.js", "/rewind.js", "/transform.js",
];

self.addEventListener("install", (e) => {
  e.waitUntil(caches.open(CACHE).then((c) => c.addAll(PRECACHE)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));

self.addEventListener("fetch", (e) => {
  const url = new URL(e.request.url);
  if (e.request.method !== "GET" || url.origin !== self.location.origin || url.pathname === "/ws") return;
  const key = url.pathname;   // the fragment is never sent; a query names the same file
  e.respondWith(fetch(e.request).then((r) => {
    if (r.ok) { const copy = r.clone(); caches.open(CACHE).then((c) => c.put(key, copy)); }
    return r;
  }).catch(() => caches.match(key).then((r) => r ?? Response.error())));
});
