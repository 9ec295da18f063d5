import RewindCore
import RewindLoop

/// Closing a connection. Three verbs, one meaning each:
/// - `close`: say why (`bye`; an HTTP status; `close(afterWriting:)` without
///   a word), then close once that is written.
/// - `closeAfterTurn`: the same, once this loop turn's work is done.
/// - `endNow`: end at once, writing nothing (the peer is gone); the server
///   also resets sockets whose peer did not close after `bye` in time
///   (`Sessions.resetLater`).
/// Each ends in `ConnectionHost.connectionEnded`, once.
extension Connection {
    /// Says `bye` and closes once it is written (a WebSocket: in a text
    /// frame, then its close frame; an HTTP request still arriving: a status).
    func close(reason: String, retry: Bool, message: String) {
        guard !isClosed else { return }
        if wire.mode == .http {
            let status = reason == "handshake_timeout" ? 408 : reason == "rate_limited" ? 503 : 400
            out.queue.append(SharedBytes(HTTPResponse(status, message).bytes))
            return close(afterWriting: reason)
        }
        // What is queued behind a reply still streaming is dropped; end its line (its message) so the bye stands alone.
        // (`behind` is empty or starts with a reply streaming: `flush` moves what is ahead of it to `output`.)
        if let rare, !rare.behind.isEmpty {
            rare.behind = []
            if rare.streamStarted { _ = wire.frame(slice: SharedBytes([0x0A]), first: false, last: true, into: &out.queue) }
        }
        _ = wire.frame(SharedBytes(Push.bye(reason: reason, retry: retry, message: message)), into: &out.queue)
        out.queue += wire.closing(reason: reason)
        flush(budgeted: false)
        isClosed = true
        close()  // the socket: shut down once what is queued is written
        host.connectionEnded(self, reason: reason)
        // A peer that stops reading would keep the shutdown (and its unsent
        // bytes) pending forever: close hard after a grace period.
        host.resetLater(self)
    }

    /// Writes what is queued, then closes without a `bye`: an HTTP exchange
    /// done, or a WebSocket whose peer closed (its close echoed).
    func close(afterWriting reason: String) {
        guard !isClosed else { return }
        rare?.behind = []
        flush(budgeted: false)
        isClosed = true
        close()
        host.connectionEnded(self, reason: reason)
        host.resetLater(self)
    }

    /// Marks the connection to be closed once the current loop turn's work is
    /// done (Redis's "close as soon as possible"): a broadcast, a presence
    /// flush or a sweep that finds it dead goes on over a stable set of
    /// connections, and its groups, prompts and presence go away afterwards,
    /// in one place (`Server.connectionEnded`, from the end of the turn: `EndOfTurnPhase.closeAfterTurn`). Meanwhile it takes no more pushes
    /// and no more frames.
    func closeAfterTurn(reason: String, retry: Bool, message: String) {
        guard !isClosed, closingAfterTurn == nil else { return }
        closingAfterTurn = (reason, retry, message)
        host.closeAfterTurn(self)
    }

    /// `closeAfterTurn`'s second half, run at the end of the loop turn (`Sessions.closeThoseMarked`).
    func closeNowTheTurnIsOver() {
        guard let m = closingAfterTurn else { return }
        // Nobody reads a `bye` on a connection whose writes fail: it ends as a disconnect.
        if writeFailed { return host.connectionEnded(self, reason: m.message) }
        close(reason: m.reason, retry: m.retry, message: m.message)
    }

    /// Ends at once, without a word and without writing what is queued (the peer is gone).
    func endNow() {
        guard !isClosed else { return }
        isClosed = true
        out.queue = []
        rare?.behind = []
        close(now: true)
    }
}
