import Logging
import RewindCore
import RewindLoop

/// A connection's output: replies and pushes queued during a loop turn,
/// written once per turn, bounded (`--max-output-bytes`), large replies
/// streamed in slices (closing: `Connection+Closing.swift`).
extension Connection {

    /// Answers `r` with an error (a session adds its error prompts: `Session.fail`).
    func fail(_ r: Request, _ e: RewindError) {
        settings.counts?.error(RequestLabels.index(of: r.type), e.code)
        reply(Message.error(r.id, e, tag: r.replyTag))
    }

    func reply(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        enqueue(SharedBytes(bytes))
    }

    /// A reply produced in slices as the terminal reads it.
    func reply(streaming s: ReplyStream) {
        guard !isClosed else { return }
        rareState().behind.append(.stream(s))
        counted(s.remaining)
    }

    /// Queues a push; the same bytes object may go to many connections.
    func push(_ bytes: SharedBytes) {
        guard !isClosed, closingAfterTurn == nil else { return }
        if out.bytes + bytes.count > 2 * settings.maxOutputBytes {
            return slow("more than \(2 * settings.maxOutputBytes) bytes unread")
        }
        if let counts = settings.counts {
            counts.deliveries += 1
            counts.deliveredBytes += bytes.count
        }
        enqueue(bytes)
    }

    private func enqueue(_ b: SharedBytes) {
        if let rare, !rare.behind.isEmpty {
            rare.behind.append(.bytes(b))
            counted(b.count)  // its framing is counted when it moves to `out.queue`
        } else {
            counted(wire.frame(b, into: &out.queue))
        }
    }

    private func counted(_ count: Int) {
        out.bytes += count
        if out.bytes >= settings.maxOutputBytes && overBoundSince == nil { overBoundSince = host.now }
        markDirty()
    }

    /// Found too slow — often while pushing one event to every subscriber:
    /// closed after the loop turn, not in the middle of it.
    func slow(_ why: String) {
        guard !isClosed, closingAfterTurn == nil else { return }
        settings.counts?.slowDisconnects += 1
        settings.logger.warning("closing slow terminal", metadata: ["conn": "\(label)", "why": "\(why)"])
        closeAfterTurn(reason: "slow", retry: true, message: "\(why); reconnect and `open` with `since` to catch up")
    }


    func markDirty() {
        if !isDirty {
            isDirty = true
            host.outputPending(self)
        }
    }

    /// Writes everything queued with one `writev` (`TCPSocket.write`: what
    /// the socket does not take at once waits in the socket); a streamed reply adds
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
        guard hasOutput, !isSocketClosed else { isDirty = false; return }
        if budgeted && (!loop.mayWrite || loop.hasDeferred) {
            loop.deferToNextTurn(self)  // still dirty: what is pushed meanwhile joins this write
            return
        }
        isDirty = false
        var bytes = 0
        for b in out.queue { bytes += b.count }
        if let rare, !rare.behind.isEmpty {
            var taken = 0
            scan: while taken < rare.behind.count {
                switch rare.behind[taken] {
                case let .bytes(b):
                    let n = wire.frame(b, into: &out.queue)
                    bytes += n
                    out.bytes += n - b.count
                    taken += 1
                case let .stream(s):
                    guard rare.writing + bytes < Connection.sliceBytes else { break scan }  // more when this is read
                    let before = s.remaining
                    let slice = s.next(max: Connection.sliceBytes)
                    let n = wire.frame(slice: SharedBytes(slice), first: !rare.streamStarted, last: s.isDone, into: &out.queue)
                    rare.streamStarted = true
                    bytes += n
                    out.bytes += n - (before - s.remaining)  // the estimate becomes real bytes
                    if s.isDone {
                        out.bytes -= s.remaining
                        rare.streamStarted = false
                        taken += 1
                    }
                }
            }
            rare.behind.removeFirst(taken)
        }
        guard !out.queue.isEmpty else { return }
        let queued = write(out.queue)
        // The array is kept for the next pushes (no allocation per flush) while
        // pushes come (a document is open), unless it grew large; an idle
        // terminal holds none.
        out.queue.removeAll(keepingCapacity: out.queue.capacity <= 16 && session?.openDocuments.isEmpty == false)
        if queued > 0 { rareState().writing += queued }
        if writeFailed { return writesFailed() }
        if queued < bytes { writtenNow(bytes - queued) }
    }

    /// A write failed: the peer is gone, though its socket may not have
    /// been read to say so (a peer that never reads is not read either).
    /// Nothing more is produced for it — no slice of a streamed reply, no
    /// request taken from what it had pipelined — and it ends after the
    /// loop turn, as a disconnect.
    private func writesFailed() {
        guard !isClosed else { return }
        out.queue = []
        rare?.behind = []
        closeAfterTurn(reason: "gone", retry: true, message: "the connection failed")
    }

    private var hasOutput: Bool { !out.queue.isEmpty || !(rare?.behind.isEmpty ?? true) }

    /// The socket took `bytes` at once (in `flush`, which runs just before
    /// the loop sleeps): what a write completion does (`written`) runs on the
    /// next loop turn, which the loop then takes without sleeping.
    private func writtenNow(_ bytes: Int) {
        out.bytes -= bytes
        guard !isClosed else { return }
        if out.bytes < settings.maxOutputBytes { overBoundSince = nil }
        guard hasOutput || !isReading || wire.bufferedBytes > 0 else { return }
        if hasOutput { markDirty() }  // the rest of a streamed reply
        host.continueNextTurn(self)  // pump, next turn
    }

    /// A write's queued rest is written (or failed).
    func written(_ bytes: Int, ok: Bool = true) {
        rareState().writing -= bytes
        out.bytes -= bytes
        guard !isClosed else { return }
        guard ok else { return writesFailed() }
        if out.bytes < settings.maxOutputBytes { overBoundSince = nil }
        if hasOutput { markDirty() }  // the rest of a streamed reply
        if !isReading || wire.bufferedBytes > 0 { pump() }
    }
}
