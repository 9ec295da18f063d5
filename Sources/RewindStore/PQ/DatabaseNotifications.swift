import CLibPQ
import Glibc
import RewindCore

/// Notices on a blocking connection, for `rewind admin tail`: `LISTEN`, then
/// wait for the next notice with a timeout. The server never uses this: its
/// notices come through `PipelineConnection` on the loop.
extension Database {
    /// A notice: its channel and payload.
    public struct Notice: Sendable, Equatable {
        public var channel: String
        public var payload: String
    }

    /// `LISTEN channel`: one of ours (lowercase letters, digits, `_`), never user input.
    public func listen(_ channel: String) throws(RewindError) {
        guard !channel.isEmpty, channel.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 95 }) else {
            throw .badRequest("not a channel name: \(channel)")
        }
        try query("LISTEN \(channel)")
    }

    /// The next notice, waiting at most `timeoutMs` (nil: none came in time).
    /// Throws `unavailable` when the connection is lost.
    public func nextNotice(timeoutMs: Int32) throws(RewindError) -> Notice? {
        if let n = takeNotice() { return n }
        var pfd = pollfd(fd: PQsocket(conn), events: Int16(POLLIN), revents: 0)
        guard pfd.fd >= 0 else { throw .storage("the connection to PostgreSQL is gone") }
        let ready = poll(&pfd, 1, timeoutMs)
        if ready < 0 && errno != EINTR { throw .storage("poll failed: errno \(errno)") }
        guard ready > 0 else { return nil }
        guard PQconsumeInput(conn) == 1, PQstatus(conn) == CONNECTION_OK else {
            throw .storage("the connection to PostgreSQL was lost: \(PQ.string(PQerrorMessage(conn)).trimmingSpace)")
        }
        return takeNotice()
    }

    /// A notice libpq has already read, if any.
    private func takeNotice() -> Notice? {
        guard let n = PQnotifies(conn) else { return nil }
        defer { PQfreemem(n) }
        return Notice(channel: PQ.string(n.pointee.relname), payload: PQ.string(n.pointee.extra))
    }
}
