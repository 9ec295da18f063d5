import Glibc
import RewindCore
import RewindStore

/// The web editor's files, read once at start and served from memory
/// (`GET /` is index.html; `GET /<name>.js|css` every such file directly in
/// the folder, `WebRoute.isFilePath`): no file I/O on the loop.
struct WebFiles {
    struct File {
        let bytes: [UInt8]
        let contentType: String
    }

    private(set) var files: [String: File] = [:]
    /// Where they were read from (nil: no folder found; both paths answer 404).
    private(set) var directory: String?

    static let types = ["js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"]

    /// From `directory`, else the first `web/` holding `index.html` above the
    /// running executable (a checkout's `.build/…/rewind-server`), else `./web`.
    init(directory: String?) {
        guard let dir = directory ?? Self.besideExecutable() ?? (readTextFile("web/index.html") != nil ? "web" : nil) else { return }
        self.directory = dir
        if let page = readTextFile(dir + "/index.html") { files["/"] = File(bytes: Array(page.utf8), contentType: "text/html; charset=utf-8") }
        for name in Self.names(in: dir) where WebRoute.isFilePath("/" + name) {
            guard let type = Self.types[String(name.split(separator: ".").last ?? "")], let text = readTextFile(dir + "/" + name) else { continue }
            files["/" + name] = File(bytes: Array(text.utf8), contentType: type)
        }
    }

    private static func names(in dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in String(cString: raw.bindMemory(to: CChar.self).baseAddress!) }
            names.append(name)
        }
        return names
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
