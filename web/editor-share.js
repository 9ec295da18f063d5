// editor-share.js — the owner's Share dialog (add a user by name with a role,
// change a role, remove), and the people in the document now, as avatars in
// their caret colours.

import { $, page } from "./editor-page.js";
import { colorOf } from "./editor-presence.js";

/** Initials for an avatar: the first letters of the first two words (or the first two letters). */
export function initials(name) {
  const words = String(name).trim().split(/[\s._-]+/).filter(Boolean);
  const letters = words.length > 1 ? [words[0], words[1]].map((w) => [...w][0]) : [...(words[0] ?? "?")].slice(0, 2);
  return letters.join("").toUpperCase();
}

/** The people in the document now, one per user (a user on two terminals once), in name order. */
export function peopleIn(presence) {
  return [...new Set([...presence.values()].map((p) => p.user))].sort();
}

export function renderPeople() {
  const host = $("people");
  host.replaceChildren();
  for (const name of peopleIn(page.client?.presence ?? new Map())) {
    const a = document.createElement("span");
    a.className = "avatar";
    a.setAttribute("role", "img");
    a.title = name;
    a.setAttribute("aria-label", name);
    a.style.background = colorOf(name);
    a.textContent = initials(name);
    host.append(a);
  }
}

async function loadMembers() {
  const list = $("members");
  let info;
  try { info = await page.client.documentInfo(); } catch (e) { $("share-error").textContent = e.message; return; }
  list.replaceChildren();
  const owner = document.createElement("li");
  owner.innerHTML = `<span class="name"></span><span class="badge">owner</span>`;
  owner.querySelector(".name").textContent = info.owner;
  list.append(owner);
  for (const m of info.members ?? []) {
    const li = document.createElement("li");
    li.dataset.user = m.user;
    li.innerHTML = `<span class="name"></span><select><option value="editor">Can edit</option><option value="viewer">Can view</option></select><button class="danger">Remove</button>`;
    li.querySelector(".name").textContent = m.user;
    const select = li.querySelector("select");
    select.value = m.role;
    select.setAttribute("aria-label", `Role of ${m.user}`);
    select.addEventListener("change", () => setRole(m.user, select.value));
    const remove = li.querySelector("button");
    remove.setAttribute("aria-label", `Remove ${m.user}`);
    remove.addEventListener("click", () => setRole(m.user, null));
    list.append(li);
  }
}

async function setRole(user, role) {
  $("share-error").textContent = "";
  try { await page.client.share(user, role); } catch (e) { $("share-error").textContent = e.message; }
  await loadMembers();
}

export function openShare() {
  $("share-error").textContent = "";
  $("members").replaceChildren();   // nothing stale while the members are read
  $("share-dialog").classList.remove("hidden");
  $("share-add").elements.user.focus();
  loadMembers();
}

export function closeShare() {
  $("share-dialog").classList.add("hidden");
  $("share").focus();
}

export function installShare() {
  $("share").addEventListener("click", openShare);
  $("share-done").addEventListener("click", closeShare);
  $("share-dialog").addEventListener("click", (e) => { if (e.target.id === "share-dialog") closeShare(); });
  $("share-dialog").addEventListener("keydown", (e) => { if (e.key === "Escape") closeShare(); });
  $("share-add").addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = e.target.elements;
    const user = f.user.value.trim();
    if (!user) return;
    await setRole(user, f.role.value);
    if (!$("share-error").textContent) f.user.value = "";
  });
}
