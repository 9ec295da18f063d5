// editor.js — the web editor's page (index.html loads it): each part's controls
// wired, then the sign-in (a link's, else the tab's). The parts:
//   editor-signin.js    signing in and out (remembered for the tab, never left in the URL)
//   editor-route.js     the address: #doc=<id> or home; back, forward, reload
//   editor-library.js   the home screen: your documents, new, recently deleted; delete with Undo
//   editor-start.js     the home screen's quick actions, peek and pop
//   editor-title.js     the open document's title (rename) and what your role allows
//   editor-share.js     the Share dialog; who is in the document
//   editor-document.js  the document drawn and edited (editor-text.js, editor-presence.js)
//   editor-prompts.js   undo, redo, shake, prompts as alerts
//   editor-keys.js      keyboard shortcuts, a phone shaken
//   editor-history.js   the history slider (scrub)
//   editor-changes.js   "Your changes": your undo groups, undone or redone down to one
//   editor-nodes.js     Add text, Add box
//   editor-boxes.js     boxes selected, moved and resized by mouse and keyboard
//   editor-status.js    what each of the client's "change" events redraws; the status line
//   editor-page.js      the page's state, shared
//   offline.js, offline-worker.js   unsent edits kept across a reload (IndexedDB); the page served with the server away

import { page } from "./editor-page.js";
import { installSignIn, signInFromPage } from "./editor-signin.js";
import { installLibrary } from "./editor-library.js";
import { installTitle } from "./editor-title.js";
import { installShare } from "./editor-share.js";
import { installStart } from "./editor-start.js";
import { installPrompts } from "./editor-prompts.js";
import { installKeys } from "./editor-keys.js";
import { installHistory } from "./editor-history.js";
import { installChanges } from "./editor-changes.js";
import { installNodes } from "./editor-nodes.js";
import { installBoxes } from "./editor-boxes.js";

installSignIn();
installLibrary();
installTitle();
installShare();
installStart();
installPrompts();
installKeys();
installHistory();
installChanges();
installNodes();
installBoxes();

// A link's fragment signs in (taken out of the address at once; never sent to a server), else the tab's sign-in.
signInFromPage();
window.rewind = { get client() { return page.client; } };   // for the browser tests
// The page opens with the server away (a reload while offline keeps the kept edits in view): offline-worker.js.
navigator.serviceWorker?.register("/offline-worker.js").catch(() => {});
