import Logging
import RewindCore
import RewindLoop

/// A connection's output: replies and pushes queued during a loop turn,
/// written once per turn, bounded (`--max-output-bytes`), large replies
/// streamed in slices; and closing, at once or after the loop turn.
extension Connection {

    /// Answers `r` with an error; a request rejected for its content may also
    /// present an error prompt, when the terminal asked for those at hello.
    func fail(_ r: Request, _ e: RewindError) {
        counts?.error(RequestLabels.index(of: r.type), e.code)
        reply(Message.error(r.id, e, tag: r.replyTag))
        if errorPrompts && Connection.promptedErrors.contains(e.code) { host.presentErrorPrompt(e, for: r, to: self) }
    }

    /// Errors about what a request asked for (not framing, not the server's state).
    static let promptedErrors: Set<ErrorCode> = [.badRequest, .notFound, .conflict, .version, .forbidden, .tooLarge]

    func reply(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        enqueue(SharedBytes(bytes))
    }

    /// A reply produced in slices as the terminal reads it.
    func reply(streaming s: ReplyStream) {
        guard !isClosed else { return }
        behind.append(.stream(s))
        counted(s.remaining)
    }

    /// Queues a push; the same bytes object may go to many connections.
    func push(_ bytes: SharedBytes) {
        guard !isClosed, closingSoon == nil else { return }
        if outputBytes + bytes.count > 2 * maxOutputBytes {
            return slow("more than \(2 * maxOutputBytes) bytes unread")
        }
        if let counts {
            counts.deliveries += 1
            counts.deliveredBytes += bytes.count
        }
        enqueue(bytes)
    }

    private func enqueue(_ b: SharedBytes) {
        if behind.isEmpty {
            counted(transport.frame(b, into: &output))
        } else {
            behind.append(.bytes(b))
            counted(b.count)  // its framing is counted when it moves to `output`
        }
    }

    private func counted(_ count: Int) {
        outputBytes += count
        if outputBytes >= maxOutputBytes && overBoundSince == nil { overBoundSince = host.now }
        markDirty()
    }

    /// Found too slow — often while pushing one event to every subscriber:
    /// closed after the loop turn (`closeSoon`), not in the middle of it.
    func slow(_ why: String) {
        guard !isClosed, closingSoon == nil else { return }
        counts?.slowDisconnects += 1
        settings.logger.warning("closing slow terminal", metadata: ["conn": "\(label)", "why": "\(why)"])
        closeSoon(reason: "slow", retry: true, message: "\(why); reconnect and `open` with `since` to catch up")
    }


    /// Marks the connection to be closed once the current loop turn's work is
    /// done (Redis's "close as soon as possible"): a broadcast, a presence
    /// flush or a sweep that finds it dead goes on over a stable set of
    /// connections, and its groups, prompts and presence go away afterwards,
    /// in one place (`Server.closeMarked`). Meanwhile it takes no more pushes
    /// and no more frames.
    func closeSoon(reason: String, retry: Bool, message: String) {
        guard !isClosed, closingSoon == nil else { return }
        closingSoon = (reason, retry, message)
        host.closeAfterTurn(self)
    }

    /// `closeSoon`'s second half, run by the server after the loop turn.
    func closeMarked() {
        guard let m = closingSoon else { return }
        // Nobody reads a `bye` on a connection whose writes fail: it ends as a disconnect.
        if stream.writeFailed { return host.connectionEnded(self, reason: m.message) }
        close(reason: m.reason, retry: m.retry, message: m.message)
    }

    func markDirty() {
        if !isDirty {
            isDirty = true
            host.outputPending(self)
        }
    }

    /// Writes everything queued with one `writev` (`TCPStream.write`: what
    /// the socket does not take at once is queued in libuv); a streamed reply adds
    /// a slice only while less than `sliceBytes` are still being written.
    ///
    /// At most `EventLoop.writesPerTurn` connections are written per loop
    /// turn: past it, or while others wait so (`budgeted`), the connection
    /// stays dirty and is written on a next turn, in order
    /// (`EventLoop.deferToNextTurn`), which the loop takes without sleeping.
    /// A broadcast to thousands of terminals
    /// is so written in parts, with the loop reading in between: events
    /// committed meanwhile join the output of the terminals not yet written
    /// (one write instead of two), and submits are not kept waiting for the
    /// whole fan-out.
    func flush(budgeted: Bool = true) {
        guard hasOutput, !stream.isClosed else { isDirty = false; return }
        if budgeted && (!stream.loop.mayWrite || stream.loop.hasDeferred) {
            stream.loop.deferToNextTurn(self)  // still dirty: what is pushed meanwhile joins this write
            return
        }
        isDirty = false
        var bytes = 0
        for b in output { bytes += b.count }
        if !behind.isEmpty {
            var taken = 0
            scan: while taken < behind.count {
                switch behind[taken] {
                case let .bytes(b):
                    let n = transport.frame(b, into: &output)
                    bytes += n
                    outputBytes += n - b.count
                    taken += 1
                case let .stream(s):
                    guard writing + bytes < Connection.sliceBytes else { break scan }  // more when this is read
                    let before = s.remaining
                    let slice = s.next(max: Connection.sliceBytes)
                    let n = transport.frame(slice: SharedBytes(slice), first: !streamStarted, last: s.isDone, into: &output)
                    streamStarted = true
                    bytes += n
                    outputBytes += n - (before - s.remaining)  // the estimate becomes real bytes
                    if s.isDone {
                        outputBytes -= s.remaining
                        streamStarted = false
                        taken += 1
                    }
                }
            }
            behind.removeFirst(taken)
        }
        guard !output.isEmpty else { return }
        let queued = stream.write(output)
        // The array is kept for the next pushes (no allocation per flush), unless it grew large.
        output.removeAll(keepingCapacity: output.capacity <= 16)
        writing += queued
        if stream.writeFailed { return peerGone() }
        if queued < bytes { writtenNow(bytes - queued) }
    }

    /// A write failed: the peer is gone, though its socket may not have
    /// been read to say so (a peer that never reads is not read either).
    /// Nothing more is produced for it — no slice of a streamed reply, no
    /// request taken from what it had pipelined — and it ends after the
    /// loop turn, as a disconnect.
    private func peerGone() {
        guard !isClosed else { return }
        output = []
        behind = []
        closeSoon(reason: "gone", retry: true, message: "the connection failed")
    }

    private var hasOutput: Bool { !output.isEmpty || !behind.isEmpty }

    /// The socket took `bytes` at once (in `flush`, which runs just before
    /// the loop sleeps): what a write completion does (`written`) runs on the
    /// next loop turn, which the loop then takes without sleeping.
    private func writtenNow(_ bytes: Int) {
        outputBytes -= bytes
        guard !isClosed else { return }
        if outputBytes < maxOutputBytes { overBoundSince = nil }
        guard hasOutput || !stream.isReading || transport.bufferedBytes > 0 else { return }
        if hasOutput { markDirty() }  // the rest of a streamed reply
        host.continueNextTurn(self)  // pump, next turn
    }

    /// A write's queued rest is written (or failed).
    func written(_ bytes: Int, ok: Bool = true) {
        writing -= bytes
        outputBytes -= bytes
        guard !isClosed else { return }
        guard ok else { return peerGone() }
        if outputBytes < maxOutputBytes { overBoundSince = nil }
        if hasOutput { markDirty() }  // the rest of a streamed reply
        if !stream.isReading || transport.bufferedBytes > 0 { pump() }
    }

    /// Says `bye` and closes once it is written (a WebSocket: in a text
    /// frame, then its close frame; an HTTP request still arriving: a status).
    func close(reason: String, retry: Bool, message: String) {
        guard !isClosed else { return }
        if mode == .http {
            let status = reason == "handshake_timeout" ? 408 : reason == "rate_limited" ? 503 : 400
            output.append(SharedBytes(HTTPResponse(status, message).bytes))
            return endAfterWriting(reason: reason)
        }
        // What is queued behind a reply still streaming is dropped; end its line (its message) so the bye stands alone.
        // (`behind` is empty or starts with a reply streaming: `flush` moves what is ahead of it to `output`.)
        if !behind.isEmpty {
            behind = []
            if streamStarted { _ = transport.frame(slice: SharedBytes([0x0A]), first: false, last: true, into: &output) }
        }
        _ = transport.frame(SharedBytes(Message.bye(reason: reason, retry: retry, message: message)), into: &output)
        output += transport.closing(reason: reason)
        flush(budgeted: false)
        isClosed = true
        stream.close()
        host.connectionEnded(self, reason: reason)
        // A peer that stops reading would keep the shutdown (and its unsent
        // bytes) pending forever: close hard after a grace period.
        host.closeHardLater(stream)
    }

    /// Closes without a word (the peer is gone).
    func drop() {
        guard !isClosed else { return }
        isClosed = true
        output = []
        behind = []
        stream.close(now: true)
    }
}
