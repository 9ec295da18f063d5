import RewindLoop
import RewindStore

/// What `GET /metrics` and `GET /health` read of the running server.
struct HealthCheck {
    let store: EventStore
    let notifications: Notifications
    let sessions: Sessions
    let helloGate: HelloGate
    let documents: Documents
    let metrics: ServerMetrics?
    let loop: EventLoop
    let statementTimeoutMs: UInt64
    let shuttingDown: () -> Bool

    /// The text `GET /metrics` answers, with what the server knows now.
    func metricsText() -> [UInt8] {
        guard let metrics else { return [] }
        let loaded = documents.all
        var terminals = 0
        for d in loaded { terminals += d.subscribers.count }
        return metrics.render(.init(connections: sessions.count, hellosChecking: helloGate.inFlight, hellosWaiting: helloGate.queued,
                                    documentsLoaded: loaded.count, documentTerminals: terminals,
                                    reconnects: store.reconnects + notifications.reconnects,
                                    outages: store.outages, unavailableSeconds: store.unavailableSeconds,
                                    leftReadOnly: store.leftReadOnly + notifications.leftReadOnly))
    }

    /// `GET /health`: healthy when every connection to the catalog is up and a
    /// trivial query answers within `--db-timeout`; otherwise the reason, in
    /// words, for the operator reading the 503. Shards that are not served
    /// (docs/scaling.md) are named on a second line of a healthy answer.
    func check(_ done: @escaping (_ healthy: Bool, _ reason: String) -> Void) {
        if shuttingDown() { return done(false, "shutting down") }
        if let why = store.unavailableReason {
            // libpq's message may run over lines ("\n\tIs the server running…"): one line here.
            return done(false, "database unreachable: " + why.split(whereSeparator: \.isNewline).map { $0.trimmingPrefix("\t") }.joined(separator: " "))
        }
        var answered = false
        let deadline = Timer(loop: loop)
        let timeoutMs = statementTimeoutMs
        deadline.start(after: timeoutMs) {
            deadline.close()
            guard !answered else { return }
            answered = true
            done(false, "database unreachable: no answer to SELECT 1 within \(timeoutMs / 1000) s")
        }
        store.ping { error in
            deadline.close()
            guard !answered else { return }
            answered = true
            if let error { return done(false, "database unreachable: \(error.message)") }
            // A shard down leaves the instance serving every other document: healthy, said on a second line.
            let down = store.shardStates.filter { !$0.serving }.map { "\($0.name) (\($0.why ?? "not served"))" }
            done(true, down.isEmpty ? "ok" : "ok\nshards not served: " + down.joined(separator: ", ").split(whereSeparator: \.isNewline).joined(separator: " "))
        }
    }
}
