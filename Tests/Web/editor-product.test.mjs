// The web editor's product modules without a browser: the home screen's rows,
// the address, the sign-in link, titles and roles, avatars, boxes dragged,
// Your changes (the whole page runs in Tests/Browser/test_editor.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { ago, docRow } from "../../web/editor-library.js";
import { docIn, hashFor } from "../../web/editor-route.js";
import { credentialsIn, jwtSubject, withoutCredentials } from "../../web/editor-signin.js";
import { allowed, tabTitle } from "../../web/editor-title.js";
import { initials, peopleIn } from "../../web/editor-share.js";
import { arrowStep, dragged } from "../../web/editor-boxes.js";
import { changeRows } from "../../web/editor-changes.js";
import { nodeName } from "../../web/editor-document.js";

const now = Date.parse("2026-11-28T12:00:00Z");

test("home: how long ago, and a row's title, badge and line", () => {
  assert.equal(ago("2026-11-28T11:59:40Z", now), "just now");
  assert.equal(ago("2026-11-28T11:59:00Z", now), "1 minute ago");
  assert.equal(ago("2026-11-28T09:00:00Z", now), "3 hours ago");
  assert.equal(ago("2026-11-20T12:00:00Z", now), "8 days ago");
  assert.equal(ago("2026-12-01T00:00:00Z", now), "just now", "a clock ahead is not the future");
  const mine = { doc: "a", title: null, role: "owner", owner: "alice", edited: "2026-11-28T11:58:00Z", last_editor: { user: "alice", name: "Alice" } };
  assert.deepEqual(docRow(mine, "alice", now), { title: "Untitled", meta: "edited 2 minutes ago by you", badge: null });
  const shared = { doc: "b", title: "Plans", role: "viewer", owner: "bob", edited: "2026-11-28T10:00:00Z", last_editor: { user: "bob", name: "Bob B." } };
  assert.deepEqual(docRow(shared, "alice", now), { title: "Plans", meta: "edited 2 hours ago by Bob B.", badge: "bob's · can view" });
  assert.equal(docRow({ ...shared, role: "editor", last_editor: null }, "alice", now).meta, "created 2 hours ago");
  assert.equal(docRow({ ...shared, role: "editor" }, "alice", now).badge, "bob's · can edit");
});

test("the address: #doc=<id> both ways, any id; nothing is home", () => {
  for (const id of ["d", "doc-1b2c", "a b&c=d#é/😀"]) assert.equal(docIn(hashFor(id)), id);
  assert.equal(hashFor(null), "");
  assert.equal(docIn(""), null);
  assert.equal(docIn("#"), null);
  assert.equal(docIn("#user=alice&token=t"), null);
});

test("a sign-in link: read, then taken out of the address (what it opens stays)", () => {
  assert.deepEqual(credentialsIn("#user=alice&token=t0k&doc=x"), { user: "alice", token: "t0k" });
  assert.deepEqual(credentialsIn("#jwt=aaa.bbb.ccc"), { token: "aaa.bbb.ccc" });
  assert.equal(credentialsIn("#doc=x"), null);
  assert.equal(credentialsIn("#user=alice"), null, "a user without a token signs nobody in");
  assert.equal(withoutCredentials("#user=alice&token=t0k&doc=x"), "#doc=x");
  assert.equal(withoutCredentials("#jwt=aaa.bbb.ccc"), "");
  const payload = Buffer.from(JSON.stringify({ sub: "app-user-7", name: "Grace" })).toString("base64url");
  assert.equal(jwtSubject(`h.${payload}.s`), "app-user-7");
  assert.equal(jwtSubject("not a token"), null);
});

test("titles and roles: what the toolbar offers, the tab's title, a node's name", () => {
  assert.deepEqual(allowed("owner"), { rename: true, share: true, delete: true });
  assert.deepEqual(allowed("editor"), { rename: true, share: false, delete: false });
  assert.deepEqual(allowed("viewer"), { rename: false, share: false, delete: false });
  assert.deepEqual(allowed(null), { rename: false, share: false, delete: false }, "nothing until the role is known");
  assert.equal(tabTitle("Plans"), "Plans — Rewind");
  assert.equal(tabTitle(null), "Untitled — Rewind");
  assert.equal(nodeName({ kind: "text", props: { title: "Agenda" } }), "Agenda");
  assert.equal(nodeName({ kind: "text", props: {} }), "Text");
  assert.equal(nodeName({ kind: "view", props: { title: 7 } }), "Box", "a title that is not a string is not shown");
});

test("avatars: initials, one per user, in name order", () => {
  assert.equal(initials("alice"), "AL");
  assert.equal(initials("Grace Hopper"), "GH");
  assert.equal(initials("app-user-7"), "AU");
  assert.equal(initials("😀x"), "😀X");
  const presence = new Map([["c1", { user: "bob" }], ["c2", { user: "alice" }], ["c3", { user: "bob" }]]);
  assert.deepEqual(peopleIn(presence), ["alice", "bob"]);
});

test("boxes: dragged and resized in whole pixels, never off the canvas or below 16 px; the arrow keys", () => {
  assert.deepEqual(dragged([10, 20, 100, 50], 5.4, -3.6, false), [15, 16, 100, 50]);
  assert.deepEqual(dragged([10, 20, 100, 50], -50, -50, false), [0, 0, 100, 50]);
  assert.deepEqual(dragged([10, 20, 100, 50], 20, 10, true), [10, 20, 120, 60]);
  assert.deepEqual(dragged([10, 20, 100, 50], -200, -200, true), [10, 20, 16, 16]);
  assert.deepEqual(dragged(["10", "20", "100", "50"], 1, 1, false), [11, 21, 100, 50], "frames as strings too");
  assert.deepEqual(arrowStep({ key: "ArrowRight" }), { dx: 10, dy: 0, resizing: false });
  assert.deepEqual(arrowStep({ key: "ArrowUp", shiftKey: true }), { dx: 0, dy: -1, resizing: false });
  assert.deepEqual(arrowStep({ key: "ArrowDown", altKey: true }), { dx: 0, dy: 10, resizing: true });
  assert.equal(arrowStep({ key: "a" }), null);
});

test("Your changes: the history's groups as rows, with how many steps reach each", () => {
  const rows = changeRows([{ group: "g3", action: "Move", version: 9 }, { group: "g2", action: null, version: 7 }], "undo");
  assert.deepEqual(rows.map((r) => [r.title, r.steps]), [["Undo Move", 1], ["Undo Edit", 2]]);
  assert.deepEqual(changeRows(undefined, "redo"), []);
  assert.equal(changeRows([{ action: "Typing" }], "redo")[0].title, "Redo Typing");
});
