import Logging
import RewindLoop

/// PostgreSQL's notices to this server: one connection of its own that only
/// `LISTEN`s, driven by the loop. Any instance (or an operator's command)
/// that changes shared state notifies in the same transaction; every
/// instance hears it here.
///
/// While the connection is down, notices are lost: `onListening` runs each
/// time listening (re)starts, so that whoever caches what notices keep fresh
/// can reload it.
public final class Notifications {
    private let connection: PipelineConnection
    private let channels: [String]
    private let logger: Logger
    public private(set) var isListening = false
    private let keepalive: Timer

    /// A notice: channel and payload.
    public var onNotice: (String, String) -> Void = { _, _ in }
    /// Listening started (again): notices sent meanwhile were missed.
    public var onListening: () -> Void = {}

    public init(loop: EventLoop, conninfo: String, channels: [String], timeouts: PipelineConnection.Timeouts = .init(), logger: Logger) {
        self.channels = channels
        self.logger = logger
        keepalive = Timer(loop: loop)
        connection = PipelineConnection(loop: loop, conninfo: conninfo, timeouts: timeouts, logger: logger)
        connection.onNotify = { [unowned self] channel, payload in self.onNotice(channel, payload) }
        connection.onReady = { [unowned self] in self.listen() }
        connection.onLost = { [unowned self] in
            self.isListening = false
            self.logger.warning("lost the notification connection; access changes from elsewhere wait until it is back")
        }
    }

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
        keepalive.close()
        connection.stop()
    }

    private func listen() {
        // Channel names are ours (constants), not user input.
        connection.send(channels.map { .init("LISTEN \($0)") }) { [unowned self] result in
            switch result {
            case .success:
                self.isListening = true
                self.onListening()
            case let .failure(e):
                self.logger.warning("LISTEN failed: \(e)")
            }
        }
    }
}
