// editor-keys.js — the keyboard's shortcuts (Ctrl/Cmd+Z, Shift+Ctrl/Cmd+Z or
// Ctrl/Cmd+Y, Alt+Shift+Z, Escape) and a phone shaken (`devicemotion`).

import { $, page } from "./editor-page.js";
import { redo, shake, undo } from "./editor-prompts.js";
import { closePeek } from "./editor-start.js";

/** What a key press asks for: "undo", "redo", "shake", "escape", or null. */
export function keyCommand(e) {
  const mod = e.ctrlKey || e.metaKey;
  if (mod && !e.altKey && e.key.toLowerCase() === "z") return e.shiftKey ? "redo" : "undo";
  if (mod && !e.altKey && e.key.toLowerCase() === "y") return "redo";
  if (e.altKey && e.shiftKey && e.code === "KeyZ") return "shake";
  if (e.key === "Escape") return "escape";
  return null;
}

/** A phone shaken: two strong jolts within half a second. Each motion's acceleration and time in; true when it makes a shake. */
export function shakeDetector() {
  let jolts = [];
  return (a, now) => {
    const g = Math.hypot(a.x ?? 0, a.y ?? 0, a.z ?? 0);
    if (g < 22) return false;
    jolts = jolts.filter((t) => now - t < 500).concat([now]);
    if (jolts.length < 2) return false;
    jolts = [];
    return true;
  };
}

export function installKeys() {
  document.addEventListener("keydown", (e) => {
    if ($("editor").classList.contains("hidden") || page.scrub) return;
    if (e.target?.closest?.("#doc-title, .dialog")) return;   // the title's own undo; a dialog's keys
    const command = keyCommand(e);
    if (command === "undo" || command === "redo" || command === "shake") {
      e.preventDefault();
      ({ undo, redo, shake })[command]();
    } else if (command === "escape" && !$("peek").classList.contains("hidden")) closePeek();
  });
  const shaken = shakeDetector();
  window.addEventListener("devicemotion", (e) => {
    const a = e.acceleration ?? e.accelerationIncludingGravity;
    if (!a || $("editor").classList.contains("hidden")) return;
    if (shaken(a, Date.now())) shake();
  });
  $("shake-permission").addEventListener("click", async () => {
    // iOS asks once, from a tap: until then no `devicemotion` reaches the page.
    try { motionAllowed = (await DeviceMotionEvent.requestPermission()) === "granted"; } catch { motionAllowed = false; }
    offerMotionPermission();
    if (!motionAllowed) $("error").textContent = "Motion access was not allowed: shake with the Shake button (or Alt+Shift+Z).";
  });
}

let motionAllowed = false;
/** On a phone or tablet where motion needs a permission (iOS Safari), the button that asks for it, until it is given. */
export function offerMotionPermission() {
  const asks = typeof globalThis.DeviceMotionEvent?.requestPermission === "function" && globalThis.navigator?.maxTouchPoints > 0;
  $("shake-permission").classList.toggle("hidden", !asks || motionAllowed);
}
