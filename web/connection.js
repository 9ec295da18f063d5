// connection.js — one WebSocket to the server at a time, under RewindClient:
// `hello` first, requests matched to their replies by `re` (the one reply
// matcher, which the smaller `connect()` API of rewind.js uses too), pushes
// handed to `handlePush`, a ping every 15 s, and reconnecting with backoff
// (0.25 s doubling to 5 s) and jitter.

/** `ws://` or `wss://` and this page's host, path `/ws`. */
export function wsURL(location = globalThis.location) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
}

/**
 * The socket's side of a session. A subclass says what to do after each hello
 * (`afterHello`) and with each push (`handlePush`); `loaded` (set by it) says
 * whether there is something to resume, so that a lost connection is
 * "reconnecting" rather than "offline".
 *
 * status: "connecting" | "ready" | "reconnecting" | "offline" | "closed"
 */
export class Connection extends EventTarget {
  // getToken: an app's signed token, fetched from its backend (async), at each hello and before the token expires.
  constructor({ url = wsURL(), user, token, getToken, client, locale, WebSocketImpl = globalThis.WebSocket } = {}) {
    super();
    Object.assign(this, { url, user, token, getToken, client, locale, WebSocketImpl });
    this.status = "offline";
    this.lastError = null;
    this.loaded = false;
    this.socket = null;
    this.nextID = 1;
    this.waiting = new Map();        // id → {resolve, reject}
    this.backoff = 250;
    this.stopped = false;
  }

  emit(kind) { this.dispatchEvent(new CustomEvent("change", { detail: kind })); }
  setStatus(s) { if (this.status !== s) { this.status = s; this.emit("status"); } }

  /** Connects and says hello; resolves with the hello reply (reconnects by itself afterwards). */
  start() {
    this.stopped = false;
    return new Promise((resolve, reject) => {
      this.firstHello = { resolve, reject };
      this.connect();
    });
  }

  stop() {
    this.stopped = true;
    clearInterval(this.pinger);
    this.socket?.close(1000);
    this.setStatus("closed");
  }

  connect() {
    if (this.stopped) return;
    this.setStatus(this.loaded ? "reconnecting" : "connecting");
    this.attach(new this.WebSocketImpl(this.url));
  }

  /** Makes `socket` this session's: its messages go through `receive`; its end, to `disconnected`. */
  attach(socket) {
    this.socket = socket;
    socket.onopen = () => this.hello();
    socket.onmessage = (e) => this.receive(JSON.parse(e.data));
    socket.onclose = () => { if (this.socket === socket) this.disconnected(); };
    socket.onerror = () => {};
    return socket;
  }

  async hello() {
    try {
      if (this.getToken) this.token = await this.getToken();   // a fresh one each time: the last may have expired
      const r = await this.request("hello", { user: this.user, token: this.token, client: this.client, ...(this.locale ? { locale: this.locale } : {}) });
      this.backoff = 250;
      this.helloUser = r.user;   // who the server says this is (with a signed token: its handle)
      this.shownAs = r.name ?? r.user;   // the name events and presence show for this user (a signed token's `name`)
      this.keepAlive();
      await this.afterHello(r);
      this.firstHello?.resolve(r);
      this.firstHello = null;
    } catch (e) {
      this.lastError = e;
      if (e.code === "unauthorized") {
        this.stopped = true;
        this.setStatus("closed");
        this.socket?.close(1000);
      }
      this.firstHello?.reject(e);
      this.firstHello = null;
    }
  }

  /** `token_expiring`: a new token from `getToken`, sent with `refresh` (without one, the server ends the session at `exp`). */
  async refreshToken() {
    if (!this.getToken) return;
    try {
      this.token = await this.getToken();
      await this.request("refresh", { token: this.token });
    } catch (e) {
      this.lastError = e;
      this.emit("failed");
    }
  }

  disconnected() {
    this.socket = null;
    clearInterval(this.pinger);
    this.failWaiting(() => Object.assign(new Error("the connection closed"), { code: "unavailable" }));
    if (this.stopped || this.status === "closed") return;
    this.setStatus(this.loaded ? "reconnecting" : "offline");
    const wait = this.backoff * (0.5 + Math.random());   // jitter: a restarted server is not hit by everyone at once
    this.backoff = Math.min(this.backoff * 2, 5000);
    setTimeout(() => this.connect(), wait);
  }

  /** A ping every 15 s from now on (a new one replaces the last). */
  keepAlive() {
    clearInterval(this.pinger);
    this.pinger = setInterval(() => this.request("ping").catch(() => {}), 15000);
    this.pinger.unref?.();   // under node (tests): the ping does not keep the process alive
  }

  /** Sends a request; resolves with the reply, rejects with an Error carrying `code` (and `details`). */
  request(type, fields = {}) {
    if (!this.socket || this.socket.readyState !== 1) return Promise.reject(Object.assign(new Error("not connected"), { code: "unavailable" }));
    const id = this.nextID++;
    this.socket.send(JSON.stringify({ id, type, ...fields }));
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }

  /** One message from the server: a reply settles its request; a push goes to `handlePush`. */
  receive(m) {
    if (m.re !== undefined && m.push === undefined) {
      const w = this.waiting.get(m.re);
      if (!w) return;
      this.waiting.delete(m.re);
      if (m.ok) w.resolve(m);
      else w.reject(Object.assign(new Error(m.error?.message ?? "error"), m.error ?? {}));
      return;
    }
    if (m.push) this.handlePush(m);
  }

  /** Every request still waiting is rejected, each with an error of `makeError()`. */
  failWaiting(makeError) {
    for (const w of this.waiting.values()) w.reject(makeError());
    this.waiting.clear();
  }

  async afterHello() { this.setStatus("ready"); }
  handlePush() {}
}
