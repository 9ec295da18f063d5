import Logging
import RewindCore
import RewindLoop
import RewindStore

/// One document as the server serves it: the committed state, the state with
/// transactions still being committed on top (`speculative`), and the
/// terminals that have it open.
///
/// A submit is validated and applied to the speculative ledger at once, so the
/// next submit can be checked against it without waiting for the commit; the
/// event then goes to the store's next group commit. Only when the commit is
/// confirmed is the event applied to the committed ledger, broadcast, and
/// acknowledged. If an append does not commit (storage down, another server
/// wrote first), everything speculative is dropped (`speculative = committed`,
/// a cheap copy-on-write assignment), the log is read to catch up, and
/// transactions that can be retried are run again from their original request.
final class DocumentRuntime {
    typealias Reply = (Result<Int64, RewindError>) -> Void

    struct SubmitRequest {
        var submission: DocumentLedger.Submission
        var replies: [Reply]
        var attempts = 0
    }

    private struct Pending {
        let event: Event
        var request: SubmitRequest
    }

    private enum State { case stale, catchingUp, ready }

    let id: String
    private unowned let server: Server
    private(set) var committed: DocumentLedger
    private var speculative: DocumentLedger
    private var committedHeadID: String?
    private var speculativeHeadID: String?
    private var state = State.stale
    private var pending: [Pending] = []
    private var whenReadyQueue: [(RewindError?) -> Void] = []
    private var generation = 0

    private(set) var subscribers: [Int: Connection] = [:]
    /// Wire form of the newest committed events, oldest first, for catch-up from memory.
    private(set) var recent: [(version: Int64, json: JSON)] = []

    init(id: String, server: Server) {
        self.id = id
        self.server = server
        committed = DocumentLedger(doc: id, limits: server.config.limits)
        speculative = committed
    }

    var isIdle: Bool { subscribers.isEmpty && pending.isEmpty && whenReadyQueue.isEmpty && state != .catchingUp }
    var hasPending: Bool { !pending.isEmpty }

    func subscribe(_ c: Connection) { subscribers[c.id] = c }
    func unsubscribe(_ c: Connection) { subscribers[c.id] = nil }

    // MARK: Readiness and catch-up

    /// Runs `body` once the runtime has read the log up to its head (at once if it has).
    func whenReady(_ body: @escaping (RewindError?) -> Void) {
        if state == .ready && whenReadyQueue.isEmpty { body(nil); return }
        whenReadyQueue.append(body)
        if state == .stale { catchUp() }
    }

    /// Like `whenReady`, but first asks the log for its head, so that events
    /// another server appended are read before `body` runs (used by `open`).
    func whenCurrent(_ body: @escaping (RewindError?) -> Void) {
        guard state == .ready && whenReadyQueue.isEmpty else { return whenReady(body) }
        server.store.head(doc: id) { [self] result in
            switch result {
            case let .failure(e): body(e)
            case .success(nil): body(.notFound("no document \"\(self.id)\""))
            case let .success(head?):
                if head > self.committed.version && self.state == .ready && self.pending.isEmpty { self.state = .stale }
                self.whenReady(body)
            }
        }
    }

    private func catchUp() {
        state = .catchingUp
        server.store.head(doc: id) { [self] result in
            switch result {
            case let .failure(e): self.catchUpFailed(e)
            case .success(nil): self.catchUpFailed(.notFound("no document \"\(id)\""))
            case let .success(head?): self.readLog(upTo: head)
            }
        }
    }

    private func readLog(upTo head: Int64) {
        guard committed.version < head else { return caughtUp() }
        server.store.events(doc: id, after: committed.version, to: head, limit: 5_000) { [self] result in
            switch result {
            case let .failure(e): self.catchUpFailed(e)
            case let .success(events):
                do throws(RewindError) {
                    for e in events { try self.commit(e) }
                } catch {
                    self.server.logger.critical("log does not replay", metadata: ["doc": "\(self.id)", "error": "\(error)"])
                    return self.catchUpFailed(error)
                }
                if events.isEmpty { return self.catchUpFailed(RewindError(.internal, "log of \(self.id) ends before its head \(head)")) }
                self.readLog(upTo: head)
            }
        }
    }

    private func caughtUp() {
        speculative = committed
        speculativeHeadID = committedHeadID
        state = .ready
        let waiting = whenReadyQueue
        whenReadyQueue = []
        for w in waiting { w(nil) }
    }

    private func catchUpFailed(_ e: RewindError) {
        state = .stale
        let waiting = whenReadyQueue
        whenReadyQueue = []
        for w in waiting { w(e) }
        server.documentMayBeIdle(self)
    }

    // MARK: Submit → commit → broadcast → reply

    func submit(_ request: SubmitRequest) {
        whenReady { [self] error in
            if let error { return request.replies.forEach { $0(.failure(error)) } }
            self.process(request)
        }
    }

    private func process(_ request: SubmitRequest) {
        let outcome: DocumentLedger.Outcome
        do {
            outcome = try speculative.append(request.submission)
        } catch {
            return request.replies.forEach { $0(.failure(error)) }
        }
        switch outcome {
        case let .duplicate(version):
            if let i = pending.firstIndex(where: { $0.event.version == version }) {
                pending[i].request.replies += request.replies  // answered when the original commits
            } else {
                request.replies.forEach { $0(.success(version)) }
            }
        case let .appended(event):
            let prev = speculativeHeadID
            speculativeHeadID = event.id
            pending.append(Pending(event: event, request: request))
            let generation = self.generation
            server.store.append(event, after: prev) { [self] outcome in
                self.appendDone(event, generation: generation, outcome)
            }
        }
    }

    private func appendDone(_ event: Event, generation: Int, _ outcome: EventStore.AppendOutcome) {
        // Outcomes of events dropped by an earlier failure no longer matter:
        // they were built on an event that never committed, so they cannot have.
        guard generation == self.generation, let first = pending.first, first.event.version == event.version else { return }
        if case .committed = outcome {
            pending.removeFirst()
            do { try commit(event) } catch {
                server.logger.critical("committed event does not replay", metadata: ["doc": "\(id)", "error": "\(error)"])
            }
            first.request.replies.forEach { $0(.success(event.version)) }
            return
        }
        // Drop everything speculative; it was computed on top of this event.
        self.generation += 1
        let dropped = pending
        pending = []
        speculative = committed
        speculativeHeadID = committedHeadID
        state = .stale
        switch outcome {
        case let .failed(error):
            server.logger.warning("append failed", metadata: ["doc": "\(id)", "error": "\(error)"])
            for p in dropped { p.request.replies.forEach { $0(.failure(error)) } }
        default:
            // Another writer got there first: catch up from the log and run the
            // same requests again (a duplicate then answers with its version).
            server.logger.info("append clashed; catching up and retrying", metadata: ["doc": "\(id)", "outcome": "\(outcome)"])
            for p in dropped {
                var r = p.request
                r.attempts += 1
                if r.attempts > 3 {
                    r.replies.forEach { $0(.failure(RewindError(.unavailable, "document \(id) is contended; retry"))) }
                } else {
                    submit(r)
                }
            }
        }
        if whenReadyQueue.isEmpty { server.documentMayBeIdle(self) }
    }

    /// Applies a committed event and pushes it to every terminal with the document open.
    private func commit(_ event: Event) throws(RewindError) {
        try committed.replay(event)
        committedHeadID = event.id
        let json = event.json
        recent.append((version: event.version, json: json))
        if recent.count > 2 * server.config.recentEvents { recent.removeFirst(recent.count - server.config.recentEvents) }
        guard !subscribers.isEmpty else { return }
        // Encoded once; the same bytes go to every terminal.
        let bytes = SharedBytes(Message.line(.obj([("push", "events"), ("doc", .string(id)), ("events", .array([json]))])))
        for c in subscribers.values { c.push(bytes) }
    }

    /// Committed events after `since` held in memory, or nil if some are older than that.
    func recentEvents(after since: Int64) -> [JSON]? {
        if since >= committed.version { return [] }
        guard let oldest = recent.first?.version, oldest <= since + 1 else { return nil }
        return recent.drop(while: { $0.version <= since }).map(\.json)
    }
}
