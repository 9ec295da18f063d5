import Logging
import RewindCore
import RewindLoop

/// PostgreSQL's notices to this server, and this server's to the others: one
/// connection of its own, driven by the loop, that `LISTEN`s on the shared
/// channels, sends this instance's notices (presence) and holds the
/// instance's liveness lock.
///
/// **Liveness.** While listening, the connection holds the session advisory
/// lock (`Instance.lockClass`, instance id); an instance is alive exactly
/// while PostgreSQL sees that lock held (`liveInstances`). A crashed or
/// cut-off instance loses it with its session, so the others can tidy up
/// after it (its terminals' open groups, its presence) without heartbeats.
///
/// While the connection is down, notices are lost: `onListening` runs each
/// time listening (re)starts, so that whoever caches what notices keep fresh
/// can reload it.
public final class Notifications {
    private let connection: PipelineConnection
    private let channels: [String]
    private let logger: Logger
    /// This instance's id: the second key of its liveness lock.
    public let instance: Int32
    public private(set) var isListening = false
    /// Stopped: what `stop` cut short is not a failure to report (a refused
    /// start logged a LISTEN "failed" with the server shutting down).
    private var stopped = false
    private let keepalive: Timer

    /// A notice: channel and payload.
    public var onNotice: (String, String) -> Void = { _, _ in }
    /// Listening started (again): notices sent meanwhile were missed.
    public var onListening: () -> Void = {}

    /// The first key of every instance's liveness lock ("RWND").
    public static let lockClass: Int32 = 0x5257_4E44

    public init(loop: EventLoop, conninfo: String, channels: [String], instance: Int32, timeouts: PipelineConnection.Timeouts = .init(),
                logger: Logger)
    {
        self.channels = channels
        self.instance = instance
        self.logger = logger
        keepalive = Timer(loop: loop)
        connection = PipelineConnection(loop: loop, conninfo: conninfo, timeouts: timeouts, requiresPrimary: true, logger: logger)
        connection.onNotify = { [unowned self] channel, payload in self.onNotice(channel, payload) }
        connection.onReady = { [unowned self] in self.listen() }
        connection.onLost = { [unowned self] in
            self.isListening = false
            self.logger.warning("lost the notification connection; news from other instances waits until it is back")
        }
    }

    /// Times the listening connection was made again after it was lost (metrics).
    public var reconnects: Int { connection.reconnects }
    /// Times the listening connection left a server that was no longer the primary.
    public var leftReadOnly: Int { connection.leftReadOnly }

    public func start() {
        connection.start()
        // Nothing is ever in flight on a connection that only listens, so a
        // dead one would go unnoticed: ask something now and then (the
        // connection's answer timeout then catches it).
        keepalive.start(after: 10_000, repeat: 10_000) { [unowned self] in
            if self.connection.isReady && self.connection.unitsInFlight == 0 { self.connection.send([.init("SELECT 1")]) { _ in } }
        }
        keepalive.unref()
    }
    public func stop() {
        stopped = true
        keepalive.close()
        connection.stop()
    }

    private func listen() {
        // Channel names are ours (constants), not user input. The lock is
        // tried, not waited for: a previous session of ours that PostgreSQL
        // has not yet noticed is dead still holds it, which says the same.
        let lock = PipelineConnection.Statement("SELECT pg_try_advisory_lock($1::int4, $2::int4)",
                                                [String(Self.lockClass), String(instance)])
        // Named, so an operator (or a test) can tell it in pg_stat_activity.
        let name = PipelineConnection.Statement("SET application_name = 'rewind-notify'")
        connection.send([name, lock] + channels.map { .init("LISTEN \($0)") }) { [unowned self] result in
            switch result {
            case .success:
                self.isListening = true
                self.onListening()
            case let .failure(e):
                if !self.stopped { self.logger.warning("LISTEN failed: \(e)") }
            }
        }
    }

    /// Sends `payloads` on `channel` (one round trip for all; each at most
    /// 8000 bytes, PostgreSQL's limit). Best effort: lost while disconnected.
    public func notify(_ channel: String, _ payloads: [String]) {
        guard !payloads.isEmpty, connection.isReady else { return }
        var array = BinaryArray(.text)
        for p in payloads { array.append(p) }
        let s = PipelineConnection.Statement("SELECT pg_notify($1, p) FROM unnest($2::text[]) p",
                                             values: [.text(channel), .binary(array.finish())])
        connection.send([s]) { [logger] result in
            if case let .failure(e) = result { logger.debug("notify failed", metadata: ["channel": "\(channel)", "error": "\(e)"]) }
        }
    }

    /// Where an instance says it has applied a user's erasure (`<user>:<instance>`; `Erase`).
    public static let erasedChannel = "rewind_erased"

    /// The ids of the instances alive now (this one included while it listens).
    public func liveInstances(_ done: @escaping (Result<Set<Int32>, RewindError>) -> Void) {
        let q = PipelineConnection.Statement(Self.liveSQL(classParam: "$1"), [String(Self.lockClass)])
        connection.send([q]) { result in
            switch result {
            case let .failure(e): done(.failure(e))
            case let .success(outcomes):
                guard case let .rows(rows)? = outcomes.first else { return done(.failure(.storage("live instances: query failed"))) }
                done(.success(Set((0..<rows.count).compactMap { rows.int($0, 0).map { Int32(truncatingIfNeeded: $0) } })))
            }
        }
    }

    /// Advisory locks keyed by two int4 show them as classid, objid and objsubid 2.
    /// `classParam`: the placeholder that holds `lockClass` (e.g. "$1").
    static func liveSQL(classParam: String) -> String {
        """
        SELECT objid::bigint FROM pg_locks
        WHERE locktype = 'advisory' AND objsubid = 2 AND classid = \(classParam)::bigint::oid AND granted
        """
    }
}
