import CHTTPParser

/// One HTTP/1.1 request to the server API, as read by http-parser.
struct APIRequest {
    var method: String
    /// The path, percent-decoded segment by segment (a document id may hold any byte).
    var segments: [String]
    /// The request target as sent (for logs).
    var target: String
    var query: [String: String]
    /// Header names in lower case, in the order sent.
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    var keepAlive: Bool

    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
}

/// Node's http-parser (Debian's libhttp-parser) fed the bytes of one API
/// connection: requests out, in order (several when pipelined). The one place
/// that sees the C library. Bounds: the request line and headers together at
/// most `maxHeaderBytes` (else 431), a body at most `maxBodyBytes` (else 413,
/// decided from `Content-Length` before the body is read, or while a chunked
/// one arrives); anything http-parser refuses is 400 with its reason.
final class HTTPRequestParser {
    struct Failure: Error {
        let status: Int
        let message: String
    }

    let maxHeaderBytes: Int
    let maxBodyBytes: Int
    private let parser: UnsafeMutablePointer<http_parser>
    private let settings: UnsafeMutablePointer<http_parser_settings>
    private var url: [UInt8] = []
    private var field: [UInt8] = []
    private var value: [UInt8] = []
    private var inValue = false
    private var headers: [(name: String, value: String)] = []
    private var headerBytes = 0
    private var body: [UInt8] = []
    private var done: [APIRequest] = []
    private var failure: Failure?
    /// A request has begun and is not complete (for the read timeout).
    private(set) var inRequest = false

    init(maxHeaderBytes: Int, maxBodyBytes: Int) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        parser = .allocate(capacity: 1)
        settings = .allocate(capacity: 1)
        http_parser_init(parser, HTTP_REQUEST)
        http_parser_settings_init(settings)
        settings.pointee.on_message_begin = { p in HTTPRequestParser.of(p).inRequest = true; return 0 }
        settings.pointee.on_url = { p, at, n in HTTPRequestParser.of(p).took(at, n) { $0.url.append(contentsOf: $1) } }
        settings.pointee.on_header_field = { p, at, n in
            HTTPRequestParser.of(p).took(at, n) { me, bytes in
                if me.inValue { me.endHeader() }
                me.field.append(contentsOf: bytes)
            }
        }
        settings.pointee.on_header_value = { p, at, n in
            HTTPRequestParser.of(p).took(at, n) { me, bytes in
                me.inValue = true
                me.value.append(contentsOf: bytes)
            }
        }
        settings.pointee.on_headers_complete = { p in
            let me = HTTPRequestParser.of(p)
            if me.inValue { me.endHeader() }
            if p!.pointee.content_length != UInt64.max, p!.pointee.content_length > UInt64(me.maxBodyBytes) {
                me.failure = Failure(status: 413, message: "the body is longer than \(me.maxBodyBytes) bytes")
                return -1
            }
            return 0
        }
        settings.pointee.on_body = { p, at, n in
            let me = HTTPRequestParser.of(p)
            guard me.body.count + n <= me.maxBodyBytes else {
                me.failure = Failure(status: 413, message: "the body is longer than \(me.maxBodyBytes) bytes")
                return -1
            }
            me.body.append(contentsOf: UnsafeRawBufferPointer(start: at, count: n))
            return 0
        }
        settings.pointee.on_message_complete = { p in HTTPRequestParser.of(p).complete(p!); return 0 }
    }

    deinit {
        parser.deallocate()
        settings.deallocate()
    }

    private static func of(_ p: UnsafeMutablePointer<http_parser>?) -> HTTPRequestParser {
        Unmanaged<HTTPRequestParser>.fromOpaque(p!.pointee.data).takeUnretainedValue()
    }

    /// Request line and header bytes, counted against the bound as they come.
    private func took(_ at: UnsafePointer<CChar>?, _ n: Int, _ add: (HTTPRequestParser, UnsafeRawBufferPointer) -> Void) -> Int32 {
        headerBytes += n
        guard headerBytes <= maxHeaderBytes else {
            failure = Failure(status: 431, message: "the request line and headers are longer than \(maxHeaderBytes) bytes")
            return -1
        }
        add(self, UnsafeRawBufferPointer(start: at, count: n))
        return 0
    }

    private func endHeader() {
        headers.append((name: String(decoding: field, as: UTF8.self).lowercased(), value: String(decoding: value, as: UTF8.self)))
        field = []
        value = []
        inValue = false
    }

    private func complete(_ p: UnsafeMutablePointer<http_parser>) {
        let method = String(cString: http_method_str(http_method(rawValue: p.pointee.method)))
        let target = String(decoding: url, as: UTF8.self)
        let (path, query) = Self.split(target)
        done.append(APIRequest(method: method, segments: path, target: target, query: query, headers: headers, body: body,
                               keepAlive: http_should_keep_alive(p) != 0))
        url = []; headers = []; body = []; headerBytes = 0; inRequest = false
    }

    /// The requests the bytes complete, in order, and — once the bytes stop
    /// being HTTP — why: the requests before it are still answered, then the
    /// refusal, then the connection ends (nothing after it is understood).
    /// How the bytes were cut into pieces changes neither (the fuzz target checks).
    func feed(_ data: UnsafeRawBufferPointer) -> (requests: [APIRequest], failure: Failure?) {
        defer { done = [] }
        if failure != nil { return ([], nil) }  // said once
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let used = http_parser_execute(parser, settings, data.baseAddress?.assumingMemoryBound(to: CChar.self), data.count)
        if failure == nil {
            let errno = http_errno(rawValue: parser.pointee.http_errno)
            if errno == HPE_INVALID_METHOD {
                // A method HTTP/1.1's parser does not know (QUERY, BREW): allowed on no resource here.
                failure = Failure(status: 405, message: "this API takes GET, POST, PUT and DELETE")
            } else if errno != HPE_OK {
                failure = Failure(status: 400, message: "not an HTTP/1.1 request: " + String(cString: http_errno_description(errno)))
            } else if parser.pointee.upgrade != 0 || used != data.count {
                failure = Failure(status: 400, message: "this listener takes no upgrades (the WebSocket protocol is on the public port)")
            }
        }
        return (done, failure)
    }

    /// The path's segments, percent-decoded, and the query's pairs (`+` is a space in a query).
    static func split(_ target: String) -> (segments: [String], query: [String: String]) {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? ""
        let segments = path.split(separator: "/", omittingEmptySubsequences: true).map { percentDecoded($0, plusIsSpace: false) }
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query[percentDecoded(kv[0], plusIsSpace: true)] = kv.count == 2 ? percentDecoded(kv[1], plusIsSpace: true) : ""
            }
        }
        return (segments, query)
    }

    static func percentDecoded(_ s: Substring, plusIsSpace: Bool) -> String {
        var out: [UInt8] = []
        let b = Array(s.utf8)
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "%"), i + 2 < b.count, let h = hex(b[i + 1]), let l = hex(b[i + 2]) {
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(plusIsSpace && b[i] == UInt8(ascii: "+") ? UInt8(ascii: " ") : b[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
