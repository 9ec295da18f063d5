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

    /// A notice: channel and payload.
    public var onNotice: (String, String) -> Void = { _, _ in }
    /// Listening started (again): notices sent meanwhile were missed.
    public var onListening: () -> Void = {}

    public init(loop: EventLoop, conninfo: String, channels: [String], logger: Logger) {
        self.channels = channels
        self.logger = logger
        connection = PipelineConnection(loop: loop, conninfo: conninfo, logger: logger)
        connection.onNotify = { [unowned self] channel, payload in self.onNotice(channel, payload) }
        connection.onReady = { [unowned self] in self.listen() }
        connection.onLost = { [unowned self] in
            self.isListening = false
            self.logger.warning("lost the notification connection; access changes from elsewhere wait until it is back")
        }
    }

    public func start() { connection.start() }
    public func stop() { connection.stop() }

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
