// libFuzzer target: the first bytes of a connection as the HTTP side of the
// port reads them — detection, the request head parser, the route (upgrade,
// file or refusal) — built with RewindCore's sources (`scripts/fuzz/run upgrade`).
//
// Besides not trapping: a head is never longer than the bytes given nor than
// the bound, a refusal is 400 or 431, a decided route is one of those the
// protocol names, and an accepted key is base64 of 16 bytes that round-trips.

@_cdecl("LLVMFuzzerTestOneInput")
public func rewindFuzzUpgrade(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = HTTPRequest.startsRequest(bytes)
    switch HTTPRequest.parse(bytes) {
    case .needMore:
        if bytes.count > HTTPRequest.maxBytes { fatalError("needMore past the bound") }
    case let .refused(status, _):
        if status != 400 && status != 431 { fatalError("refused with \(status)") }
    case let .request(r, length):
        if length > bytes.count || length > HTTPRequest.maxBytes { fatalError("head of \(length) bytes from \(bytes.count)") }
        for origins in [WebRoute.Origins("*"), WebRoute.Origins(nil), WebRoute.Origins("https://a.example, http://b")] {
            switch WebRoute.decide(r, origins: origins) {
            case let .upgrade(key):
                guard let raw = Base64.decode(key), raw.count == 16, Base64.encode(raw) == key else { fatalError("accepted key \(key)") }
            case let .file(path):
                if !WebRoute.files.contains(path) { fatalError("serves \(path)") }
            case let .refuse(status, _, _):
                if ![400, 403, 404, 405, 426].contains(status) { fatalError("refuses with \(status)") }
            }
        }
    }
    return 0
}
