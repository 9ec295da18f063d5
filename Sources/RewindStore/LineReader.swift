import Glibc
import RewindCore

/// A file read line by line (`\n`-terminated, the last line's `\n`
/// optional), without holding it whole: export files can be larger than
/// memory. Knows its size and how far it has read, for progress.
public final class LineReader {
    private let file: UnsafeMutablePointer<FILE>
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0
    /// The number of the line `next` returned last (1-based).
    public private(set) var lineNumber = 0
    public private(set) var bytesRead: Int64 = 0
    public let size: Int64

    public init(path: String) throws(RewindError) {
        guard let f = fopen(path, "rb") else { throw .notFound("cannot open \(path): \(String(cString: strerror(errno)))") }
        file = f
        var st = stat()
        size = fstat(fileno(f), &st) == 0 ? Int64(st.st_size) : 0
    }

    deinit { fclose(file) }

    /// The next line without its `\n`; nil at the end of the file.
    public func next() -> [UInt8]? {
        var line: [UInt8] = []
        while true {
            if start < end {
                let chunk = buffer[start..<end]
                if let nl = chunk.firstIndex(of: 0x0A) {
                    line += buffer[start..<nl]
                    bytesRead += Int64(nl + 1 - start)
                    start = nl + 1
                    lineNumber += 1
                    return line
                }
                line += chunk
                bytesRead += Int64(end - start)
                start = end
            }
            let n = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            guard n > 0 else {
                if line.isEmpty { return nil }
                lineNumber += 1
                return line
            }
            start = 0
            end = n
        }
    }
}
