/// Splits a byte stream into newline-terminated frames (NDJSON), bounded in size.
///
///     feed "{\"a\":1}\n{\"b\""   ->  .line({"a":1})      buffer: {"b"
///     feed ":2}\n"               ->  .line({"b":2})      buffer: (empty)
///     feed <2 MiB with no \n>    ->  .tooLarge           discarding until \n
///
/// Only bytes that arrived since the last call are scanned for a newline: the
/// buffered remainder is known to hold none, so a long frame arriving in many
/// small pieces costs linear, not quadratic, work. A trailing `\r` is dropped
/// and empty lines are ignored. Pure: bytes in, frames out.
public struct FrameDecoder: Sendable {
    public enum Frame: Equatable, Sendable {
        case line([UInt8])
        /// A line passed `maxFrameBytes`; its bytes up to the next newline are skipped.
        case tooLarge
    }

    public let maxFrameBytes: Int
    private var partial: [UInt8] = []
    private var discarding = false

    public init(maxFrameBytes: Int = 1 << 20) { self.maxFrameBytes = maxFrameBytes }

    /// Bytes held for an incomplete frame (what this connection costs in memory).
    public var bufferedBytes: Int { partial.count }

    public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ emit: (Frame) -> Void) {
        var start = 0
        let n = chunk.count
        while start < n {
            guard let nl = chunk[start..<n].firstIndex(of: 0x0A) else {
                if !discarding {
                    if partial.count + (n - start) > maxFrameBytes {
                        partial.removeAll(keepingCapacity: false)
                        discarding = true
                        emit(.tooLarge)
                    } else {
                        partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[start..<n]))
                    }
                }
                return
            }
            if discarding {
                discarding = false
            } else if partial.count + (nl - start) > maxFrameBytes {
                partial.removeAll(keepingCapacity: false)
                emit(.tooLarge)
            } else {
                var line: [UInt8]
                if partial.isEmpty {
                    line = Array(UnsafeRawBufferPointer(rebasing: chunk[start..<nl]))
                } else {
                    line = partial
                    line.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[start..<nl]))
                    partial.removeAll(keepingCapacity: false)
                }
                if line.last == 0x0D { line.removeLast() }
                if !line.isEmpty { emit(.line(line)) }
            }
            start = nl + 1
        }
    }

    public mutating func feed(_ bytes: [UInt8], _ emit: (Frame) -> Void) {
        bytes.withUnsafeBytes { feed($0, emit) }
    }
}
