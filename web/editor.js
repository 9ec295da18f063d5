// editor.js — the web editor's page (index.html loads it): each part's controls
// wired, then the URL fragment's sign-in. The parts:
//   editor-signin.js    signing in
//   editor-start.js     the start screen: quick actions, peek and pop
//   editor-document.js  the document drawn and edited (editor-text.js, editor-presence.js)
//   editor-prompts.js   undo, redo, shake, prompts as alerts
//   editor-keys.js      keyboard shortcuts, a phone shaken
//   editor-history.js   the history slider (scrub)
//   editor-nodes.js     Add text, Add box
//   editor-status.js    what each of the client's "change" events redraws; the status line
//   editor-page.js      the page's state, shared

import { page } from "./editor-page.js";
import { installSignIn, params, signIn } from "./editor-signin.js";
import { installStart } from "./editor-start.js";
import { installPrompts } from "./editor-prompts.js";
import { installKeys } from "./editor-keys.js";
import { installHistory } from "./editor-history.js";
import { installNodes } from "./editor-nodes.js";

installSignIn();
installStart();
installPrompts();
installKeys();
installHistory();
installNodes();

// The fragment signs in (and opens a document) for tests and demos; it is never sent to a server.
const p = params(location.hash);
if (p.user && p.token) signIn(p.user, p.token, p.doc);
else if (p.jwt) signIn(undefined, p.jwt, p.doc);
window.rewind = { get client() { return page.client; } };   // for the browser tests
