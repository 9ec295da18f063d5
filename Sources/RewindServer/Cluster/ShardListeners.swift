import Logging
import RewindLoop
import RewindStore

/// A listening connection on each shard other than `home` (SPEC section
/// 17): a shard's log, roles, titles and editors are announced by its own
/// triggers and claims, so an instance hears of another's edits on a shard
/// only from that shard. Each also holds this instance's liveness lock
/// there, which the shard's queries of live instances read (a terminal's
/// open group is orphaned only when its instance is gone). Made and closed
/// as the catalog's list of shards changes (`EventStore.onShardsChanged`).
final class ShardListeners {
    private let loop: EventLoop
    private let instance: Int32
    private let timeouts: PipelineConnection.Timeouts
    private let logger: Logger
    private var listeners: [String: (conninfo: String, notifications: Notifications)] = [:]
    /// A notice from a shard: channel, payload.
    var onNotice: (String, String) -> Void = { _, _ in }
    /// A shard's listening (re)started: notices sent meanwhile were missed.
    var onListening: (String) -> Void = { _ in }

    /// What a shard announces: the same channels as the catalog, but presence and prompts, which only the catalog carries.
    static let channels = ["rewind_access", "rewind_log", "rewind_editors"]

    init(loop: EventLoop, instance: Int32, timeouts: PipelineConnection.Timeouts, logger: Logger) {
        self.loop = loop
        self.instance = instance
        self.timeouts = timeouts
        self.logger = logger
    }

    /// Whether every shard's listener is listening (health).
    var allListening: Bool { listeners.values.allSatisfy(\.notifications.isListening) }
    var notListening: [String] { listeners.filter { !$0.value.notifications.isListening }.keys.sorted() }

    func update(_ shards: [String: String]) {
        for (name, l) in listeners where shards[name] != l.conninfo {
            l.notifications.stop()
            listeners[name] = nil
        }
        for (name, conninfo) in shards where listeners[name] == nil {
            var shardLogger = logger
            shardLogger[metadataKey: "shard"] = "\(name)"
            let n = Notifications(loop: loop, conninfo: conninfo, channels: Self.channels, instance: instance, timeouts: timeouts,
                                  logger: shardLogger)
            n.onNotice = { [unowned self] channel, payload in self.onNotice(channel, payload) }
            n.onListening = { [unowned self] in self.onListening(name) }
            listeners[name] = (conninfo, n)
            n.start()
        }
    }

    func stop() {
        for l in listeners.values { l.notifications.stop() }
        listeners = [:]
    }
}
