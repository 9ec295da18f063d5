import Glibc

// The few file-system calls the store needs, without Foundation.

func listDirectory(_ path: String) throws -> [String] {
    guard let d = opendir(path) else { throw LoopErrorStub() }
    defer { closedir(d) }
    var names: [String] = []
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}

/// The file at `path` as UTF-8 text (nil: unreadable or not UTF-8).
public func readTextFile(_ path: String) -> String? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        bytes.append(contentsOf: buf[0..<n])
    }
    return String(validating: bytes, as: UTF8.self)
}

func environment(_ name: String) -> String? {
    guard let p = getenv(name) else { return nil }
    let s = String(decoding: UnsafeRawBufferPointer(start: p, count: strlen(p)), as: UTF8.self)
    return s.isEmpty ? nil : s
}

func currentDirectory() -> String {
    var buf = [CChar](repeating: 0, count: 4096)
    guard getcwd(&buf, buf.count) != nil else { return "." }
    return String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

private struct LoopErrorStub: Error {}
