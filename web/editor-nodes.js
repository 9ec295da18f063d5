// editor-nodes.js — Add text and Add box: a new node under the root, below
// the others.

import { $, act, page } from "./editor-page.js";

/** The op creating the `n`th node of `kind` ("text" or "view") this terminal adds, under the root's last child. */
export function newNodeOp(view, kind, clientID, n) {
  const y = Math.max(20, ...[...view.nodes.values()].filter((node) => node.parent === "root").map((node) => Number(node.frame[1]) + Number(node.frame[3]) + 24));
  const id = `${kind === "text" ? "text" : "box"}-${clientID.slice(-6)}-${n}`;
  return { op: "create", node: id, parent: "root", kind, frame: kind === "text" ? [20, y, 460, 90] : [20, y, 300, 120], focusable: kind === "text", text: "" };
}

let added = 0;
function addNode(kind) {
  const client = page.client;
  const op = newNodeOp(client.document.view, kind, client.client, ++added);
  act(async () => client.edit([op], { newSegment: true }));
}

export function installNodes() {
  $("add-text").addEventListener("click", () => addNode("text"));
  $("add-box").addEventListener("click", () => addNode("view"));
}
