// pushes.js — what each push the server sends does to a RewindClient (client.js), by name:
// one table, read by the tests against the server's registry of pushes (PushRegistryTests).

/**
 * What each push does to a client, by the push's name (every push also reaches
 * "push" listeners first, as received; a push not named here only them).
 */
export const PUSH_HANDLERS = {
  events(client, m) {
    if (m.doc !== client.doc || !client.loaded || client.catchingUp) return;
    for (const e of m.events) if (!client.applyEvent(e)) return client.reload();
    client.emit("document");
    client.pump();
  },
  presence(client, m) {
    if (m.doc !== client.doc || m.client === client.client) return;
    if (m.node == null) client.presence.delete(m.client); else client.presence.set(m.client, m);
    client.emit("presence");
  },
  prompt(client, m) {
    client.prompts = client.prompts.filter((p) => p.id !== m.prompt.id).concat([{ ...m.prompt, doc: m.doc }]);
    client.emit("prompts");
  },
  dismiss(client, m) {
    client.prompts = client.prompts.filter((p) => p.id !== m.prompt);
    client.emit("prompts");
  },
  prompt_state(client, m) {
    if (m.doc !== client.doc) return;
    client.promptState = m;
    client.emit("promptState");
  },
  shortcuts(client, m) {
    client.shortcuts = m.items ?? [];
    client.emit("shortcuts");
  },
  closed(client, m) {
    if (m.doc !== client.doc) return;
    if (m.reason === "moved") { client.reopenAfterMove(); return; }
    client.lastError = Object.assign(new Error(m.reason === "deleted" ? "the document was deleted" : "access to the document was taken away"), { code: m.reason });
    client.doc = null;
    client.loaded = false;
    client.emit("failed");
    client.emit("document");
  },
  token_expiring(client) {
    client.refreshToken();
  },
  renamed(client, m) {
    if (m.doc !== client.doc) return;
    client.title = m.title ?? null;
    client.emit("title");
  },
  bye(client, m) {
    client.lastError = Object.assign(new Error(m.message ?? m.reason), { code: m.reason });
    if (m.retry === false) { client.stopped = true; client.setStatus("closed"); }
    // the close follows; reconnecting (or not) happens there
  },
};

/** The pushes PUSH_HANDLERS handles. */
export const pushNames = Object.keys(PUSH_HANDLERS);
