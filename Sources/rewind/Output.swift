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
