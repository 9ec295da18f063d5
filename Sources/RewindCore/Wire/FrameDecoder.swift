/// Splits a byte stream into newline-terminated frames (NDJSON), bounded in size.
///
///     append "{\"a\":1}\n{\"b\""   next -> .line({"a":1})   next -> nil   held: {"b"
///     append ":2}\n"               next -> .line({"b":2})   next -> nil   held: (nothing)
///     append <2 MiB with no \n>    next -> .tooLarge                      skipping to \n
///
/// Bytes are appended as they arrive and frames are pulled one at a time, so
/// the caller decides when to take the next one: a connection that must wait
/// (for `hello`, for an access check, for its output to drain) simply stops
/// pulling, and what it has not read stays here, in order. Only bytes that
/// arrived since the last scan are searched for a newline (`scanned`), so a
/// long frame arriving in many small pieces costs linear, not quadratic,
/// work. A trailing `\r` is dropped and empty lines are ignored. Pure: bytes
/// in, frames out.
public struct FrameDecoder: Sendable {
    public enum Frame: Equatable, Sendable {
        case line([UInt8])
        /// A line passed `maxFrameBytes`; its bytes up to the next newline are skipped.
        case tooLarge
    }

    private var buffer: [UInt8] = []
    /// First byte not yet handed out.
    private var start = 0
    /// Bytes after `start` known to hold no newline.
    private var scanned = 0
    // The small fields last, in 32 bits: every server connection holds a decoder
    // (with the connection's fields after it, in a 192-byte size class).
    private let frameLimit: Int32
    /// Inside a line that was too large: dropping bytes up to its newline.
    private var discarding = false

    /// Bytes a line may have (limits past 2 GiB are taken as 2 GiB).
    public var maxFrameBytes: Int { Int(frameLimit) }

    public init(maxFrameBytes: Int = 1 << 20) { frameLimit = Int32(clamping: maxFrameBytes) }

    /// Bytes held, complete frames and an incomplete one (what this connection costs in memory).
    public var bufferedBytes: Int { buffer.count - start }

    /// True while an incomplete line is held or being skipped (after `next()` returned nil).
    public var holdsPartialLine: Bool { discarding || (buffer.count > start && scanned == buffer.count - start) }

    /// Bytes of the incomplete line held at the end, once `next()` returned nil.
    public var partialBytes: Int { buffer.count > start && scanned == buffer.count - start ? buffer.count - start : 0 }

    public mutating func append(_ chunk: UnsafeRawBufferPointer) {
        var chunk = chunk[...]
        if discarding {
            guard let nl = chunk.firstIndex(of: 0x0A) else { return }
            discarding = false
            chunk = chunk[(nl + 1)...]
        }
        guard !chunk.isEmpty else { return }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: false)
            start = 0
            scanned = 0
        }
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk))
    }

    public mutating func append(_ bytes: [UInt8]) { bytes.withUnsafeBytes { append($0) } }

    /// The next complete frame, or nil when none is complete yet.
    public mutating func next() -> Frame? {
        while start < buffer.count {
            let from = start + scanned
            guard let nl = buffer[from...].firstIndex(of: 0x0A) else {
                scanned = buffer.count - start
                if scanned > maxFrameBytes {
                    // Too long and still no newline: drop it and skip the rest of it.
                    release(upTo: buffer.count)
                    discarding = true
                    return .tooLarge
                }
                compact()
                return nil
            }
            let lineStart = start
            var end = nl
            if end - lineStart > maxFrameBytes {
                release(upTo: nl + 1)
                return .tooLarge
            }
            if end > lineStart, buffer[end - 1] == 0x0D { end -= 1 }
            let line = end > lineStart ? Array(buffer[lineStart..<end]) : nil
            release(upTo: nl + 1)
            if let line { return .line(line) }
        }
        return nil
    }

    /// Appends `bytes` and hands every complete frame to `emit` (for callers that never wait).
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ emit: (Frame) -> Void) {
        append(chunk)
        while let f = next() { emit(f) }
    }

    public mutating func feed(_ bytes: [UInt8], _ emit: (Frame) -> Void) {
        bytes.withUnsafeBytes { feed($0, emit) }
    }

    private mutating func release(upTo end: Int) {
        start = end
        scanned = 0
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: false)  // an idle connection holds no memory
            start = 0
        }
    }

    /// Moves the held bytes to the front once enough were handed out, so the
    /// buffer does not grow with everything a long-lived connection sent.
    private mutating func compact() {
        guard start > 0, start >= 64 * 1024 || start * 2 >= buffer.count else { return }
        buffer.removeSubrange(0..<start)
        start = 0
    }
}
