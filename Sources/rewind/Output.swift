import Glibc

/// Writes to standard error (fd 2) without touching C's global `stderr`.
func printError(_ s: String) {
    var bytes = Array(s.utf8)
    _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}

func env(_ name: String) -> String? {
    guard let p = getenv(name) else { return nil }
    let s = String(decoding: UnsafeRawBufferPointer(start: p, count: strlen(p)), as: UTF8.self)
    return s.isEmpty ? nil : s
}

/// Writes a line to standard output at once (fd 1, no buffer): `tail`'s
/// lines must reach a pipe as they happen, not when a buffer fills.
func printLine(_ s: String) {
    var bytes = Array((s + "\n").utf8)
    var sent = 0
    while sent < bytes.count {
        let n = bytes[sent...].withUnsafeMutableBytes { write(1, $0.baseAddress, $0.count) }
        if n <= 0 { return }
        sent += n
    }
}

/// Lines to standard output or a file, written in 64 KB pieces (an export
/// writes millions of short lines).
final class LineOutput {
    private let fd: Int32
    private var buffer: [UInt8] = []
    let path: String?

    /// `path` nil: standard output. A file is created (or truncated) with mode 0644.
    init(path: String?) throws {
        self.path = path
        if let path {
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard fd >= 0 else { throw OutputError(message: "cannot write \(path): \(String(cString: strerror(errno)))") }
        } else {
            fd = 1
        }
        buffer.reserveCapacity(1 << 16)
    }

    func line(_ bytes: [UInt8]) throws {
        buffer += bytes
        buffer.append(0x0A)
        if buffer.count >= 1 << 16 { try flush() }
    }

    func flush() throws {
        var sent = 0
        while sent < buffer.count {
            let n = buffer[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw OutputError(message: "cannot write \(path ?? "standard output"): \(String(cString: strerror(errno)))") }
            sent += n
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes and closes; a file is fsynced first, so a finished export is on disk.
    func close() throws {
        try flush()
        if path != nil {
            _ = fsync(fd)
            _ = Glibc.close(fd)
        }
    }
}

struct OutputError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Rows as aligned columns (the first row the header), two spaces apart; the
/// last column unpadded, so no line ends in spaces.
func printTable(_ rows: [[String]]) {
    guard let columns = rows.first?.count else { return }
    let widths = (0..<columns).map { c in rows.map { $0[c].count }.max() ?? 0 }
    for r in rows {
        print(r.enumerated().map { $0 == r.count - 1 ? $1 : $1 + String(repeating: " ", count: widths[$0] - $1.count) }.joined(separator: "  "))
    }
}
