// libFuzzer target: the bytes of one connection to the server API, as
// `APIConnection` reads them — http-parser through `HTTPRequestParser`
// (RewindServer/API/HTTPParser.swift), the path and query split and
// percent-decoded — built with RewindCore's sources (`scripts/fuzz/run api`).
//
// Besides not trapping: a refusal is 400, 405, 413 or 431; no body is longer
// than the bound, nor any request line and headers; and the same bytes fed
// in pieces (cut where the input's first byte says) give the same requests,
// and a refusal or none alike, as fed at once — the parser keeps no state
// that depends on how the socket delivered them. (Bytes both past a bound and
// malformed may be refused for the one or the other first: 431 or 400.)

let maxHeader = 1024, maxBody = 2048

struct Seen: Equatable {
    var method: String, target: String, segments: [String], query: [String: String], headers: [String], body: [UInt8], keepAlive: Bool
}

func run(_ bytes: [UInt8], cuts: Int) -> (requests: [Seen], refusal: Int?) {
    let p = HTTPRequestParser(maxHeaderBytes: maxHeader, maxBodyBytes: maxBody)
    var seen: [Seen] = []
    let step = max(1, bytes.count / max(1, cuts))
    var at = 0
    while at < bytes.count {
        let end = min(bytes.count, at + step)
        let (got, failure) = bytes[at..<end].withUnsafeBytes { p.feed($0) }
        for r in got {
            if r.body.count > maxBody { fatalError("a body of \(r.body.count) bytes") }
            seen.append(Seen(method: r.method, target: r.target, segments: r.segments, query: r.query,
                             headers: r.headers.map { $0.name + ":" + $0.value }, body: r.body, keepAlive: r.keepAlive))
        }
        if let failure {
            if ![400, 405, 413, 431].contains(failure.status) { fatalError("refused with \(failure.status)") }
            return (seen, failure.status)
        }
        at = end
    }
    return (seen, nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func rewindFuzzAPI(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let whole = run(bytes, cuts: 1)
    let pieces = run(bytes, cuts: Int(data[0] % 16) + 2)
    // (Which refusal may differ: bytes both past a bound and malformed are found one or the other first.)
    if whole.requests != pieces.requests || (whole.refusal == nil) != (pieces.refusal == nil) {
        fatalError("fed at once: \(whole.requests.count) requests, refusal \(String(describing: whole.refusal)); in pieces: \(pieces.requests.count), \(String(describing: pieces.refusal))")
    }
    for r in whole.requests {
        _ = APIResponse.problem(RewindError(.badRequest, r.target)).encoded(keepAlive: r.keepAlive)
    }
    return 0
}
