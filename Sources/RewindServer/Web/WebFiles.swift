import Glibc
import RewindStore

/// The web editor's files, read once at start and served from memory
/// (`GET /`, `GET /rewind.js`): no file I/O on the loop.
struct WebFiles {
    struct File {
        let bytes: [UInt8]
        let contentType: String
    }

    private(set) var files: [String: File] = [:]
    /// Where they were read from (nil: no folder found; both paths answer 404).
    private(set) var directory: String?

    static let served: [(path: String, file: String, type: String)] = [
        ("/", "index.html", "text/html; charset=utf-8"),
        ("/rewind.js", "rewind.js", "text/javascript; charset=utf-8"),
    ]

    /// From `directory`, else the first `web/` holding `index.html` above the
    /// running executable (a checkout's `.build/…/rewind-server`), else `./web`.
    init(directory: String?) {
        guard let dir = directory ?? Self.besideExecutable() ?? (readTextFile("web/index.html") != nil ? "web" : nil) else { return }
        self.directory = dir
        for s in Self.served {
            if let text = readTextFile(dir + "/" + s.file) { files[s.path] = File(bytes: Array(text.utf8), contentType: s.type) }
        }
    }

    subscript(path: String) -> File? { files[path] }

    private static func besideExecutable() -> String? {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        guard n > 0 else { return nil }
        var dir = String(decoding: buf[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        for _ in 0..<5 {
            guard let slash = dir.lastIndex(of: "/") else { return nil }
            dir = String(dir[..<slash])
            if readTextFile(dir + "/web/index.html") != nil { return dir + "/web" }
        }
        return nil
    }
}
