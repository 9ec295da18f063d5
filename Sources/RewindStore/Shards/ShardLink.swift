import Logging
import RewindCore
import RewindLoop

/// One shard as this instance reaches it (SPEC section 17): a connection for
/// reads and the writers its documents' appends go through. `home` is the
/// catalog's own database; every other shard is a cluster of its own, made
/// known by `rewind admin shard add`.
final class ShardLink {
    let name: String
    let conninfo: String
    let connection: PipelineConnection
    let writers: [EventStore.Writer]
    /// Users whose account this instance copied into the shard (not on `home`: the catalog is theirs).
    var usersCopied: Set<Int64> = []
    /// Checked once connected: the shard's schema and master key. Until then, and when refused, nothing is sent to it.
    var checked = false
    /// Why the shard is not served (its schema behind, another master key, not a shard), nil while it is.
    var refusal: RewindError?

    var isHome: Bool { name == ShardDirectory.home }
    var connections: [PipelineConnection] { [connection] + writers.map(\.connection) }

    init(name: String, conninfo: String, loop: EventLoop, writers: Int, timeouts: PipelineConnection.Timeouts, logger: Logger) {
        self.name = name
        self.conninfo = conninfo
        connection = PipelineConnection(loop: loop, conninfo: conninfo, timeouts: timeouts, requiresPrimary: true, logger: logger)
        self.writers = (0..<max(1, writers)).map { _ in
            let c = PipelineConnection(loop: loop, conninfo: conninfo, timeouts: timeouts, requiresPrimary: true, logger: logger)
            // Parsed and planned once per connection, not per batch (`writerSettings`): its
            // plan must not depend on the tables' sizes when prepared (schema 017, PlanStabilityTests).
            for setting in LogRows.writerSettings { c.setting(setting) }
            c.prepare(LogRows.appendName, LogRows.appendSQL)
            c.prepare(LogRows.appendWithoutNotesName, LogRows.appendWithoutNotesSQL)
            return EventStore.Writer(c)
        }
    }

    /// Whether its documents can be served now.
    var isServing: Bool { refusal == nil && (isHome || checked) && connections.allSatisfy(\.isReady) }

    /// The writer of `doc` (by a hash of its id, so a document always goes through the same one).
    func writer(for doc: String) -> EventStore.Writer {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in doc.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        return writers[Int(h % UInt64(writers.count))]
    }
}
