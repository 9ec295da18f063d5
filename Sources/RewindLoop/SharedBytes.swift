import CLibUV
import Glibc

/// Immutable bytes in memory that stays put, shared by every connection it is
/// written to: a broadcast is encoded once and the same bytes go to every
/// terminal. Freed when the last write holding it completes.
public final class SharedBytes {
    public let base: UnsafeMutableRawPointer
    public let count: Int
    /// Bytes that go on the wire before these, made once however many
    /// connections send them (a WebSocket frame's header for one push).
    public var companion: SharedBytes?

    public init(_ bytes: [UInt8]) {
        count = bytes.count
        base = .allocate(byteCount: max(count, 1), alignment: 1)
        bytes.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: count) }
    }

    deinit { base.deallocate() }
}
