/// The PROXY protocol header a TCP load balancer (HAProxy `send-proxy` /
/// `send-proxy-v2`, nginx `proxy_protocol on`) puts before a connection's
/// bytes, naming the client it accepted: version 1 (one text line) and
/// version 2 (binary). Only the source address is taken; TLVs are skipped.
/// Spec: https://www.haproxy.org/download/2.8/doc/proxy-protocol.txt
public enum ProxyHeader {
    public enum Parsed: Equatable {
        /// Not enough bytes yet.
        case needMore
        /// A complete header of `length` bytes; `source` is "address:port",
        /// or nil when the balancer speaks for itself (v2 LOCAL, v1 UNKNOWN,
        /// or an address family other than TCP over IPv4/IPv6).
        case header(source: String?, length: Int)
        case invalid(String)
    }

    /// v2's 12-byte signature.
    public static let signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    /// The longest header accepted (v2 with TLVs can be longer; balancers send far less).
    public static let maxLength = 1024

    public static func parse(_ b: [UInt8]) -> Parsed {
        if b.isEmpty { return .needMore }
        if b[0] == 0x0D { return parseV2(b) }
        if b[0] == UInt8(ascii: "P") { return parseV1(b) }
        return .invalid("expected a PROXY protocol header")
    }

    private static func parseV1(_ b: [UInt8]) -> Parsed {
        let prefix = Array("PROXY ".utf8)
        let n = min(b.count, prefix.count)
        guard Array(b[0..<n]) == Array(prefix[0..<n]) else { return .invalid("expected a PROXY protocol header") }
        if b.count < prefix.count { return .needMore }
        guard let cr = b.firstIndex(of: 0x0D) else {
            if b.contains(0x0A) { return .invalid("PROXY v1 line ended by LF alone (CRLF needed)") }
            return b.count >= 107 ? .invalid("PROXY v1 line longer than 107 bytes") : .needMore
        }
        guard cr + 1 < b.count else { return .needMore }
        guard b[cr + 1] == 0x0A, cr + 2 <= 107 else { return .invalid("PROXY v1 line not ended by CRLF within 107 bytes") }
        let fields = String(decoding: b[prefix.count..<cr], as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        if fields.first == "UNKNOWN" { return .header(source: nil, length: cr + 2) }
        guard fields.count == 5, fields[0] == "TCP4" || fields[0] == "TCP6",
              let port = UInt16(fields[3]), UInt16(fields[4]) != nil, isAddress(fields[1], v6: fields[0] == "TCP6")
        else { return .invalid("malformed PROXY v1 line") }
        return .header(source: fields[0] == "TCP6" ? "[\(fields[1])]:\(port)" : "\(fields[1]):\(port)", length: cr + 2)
    }

    private static func isAddress(_ s: String, v6: Bool) -> Bool {
        if v6 { return !s.isEmpty && s.count <= 45 && s.utf8.allSatisfy { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") || Character(UnicodeScalar($0)).isHexDigit } }
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { p in p.count <= 3 && UInt8(p) != nil }
    }

    private static func parseV2(_ b: [UInt8]) -> Parsed {
        let n = min(b.count, signature.count)
        guard Array(b[0..<n]) == Array(signature[0..<n]) else { return .invalid("expected a PROXY protocol header") }
        if b.count < 16 { return .needMore }
        let version = b[12] >> 4, command = b[12] & 0x0F
        guard version == 2, command <= 1 else { return .invalid("PROXY v2: unknown version or command") }
        let length = 16 + Int(b[14]) << 8 + Int(b[15])
        guard length <= maxLength else { return .invalid("PROXY v2 header longer than \(maxLength) bytes") }
        if b.count < length { return .needMore }
        if command == 0 { return .header(source: nil, length: length) }  // LOCAL: the balancer's own (health checks)
        let family = b[13] >> 4, transport = b[13] & 0x0F
        guard transport == 1 else { return .header(source: nil, length: length) }  // not TCP: keep the peer
        switch family {
        case 1:  // IPv4: src, dst (4 each), src port, dst port
            guard length >= 16 + 12 else { return .invalid("PROXY v2: short IPv4 address block") }
            let a = b[16..<20].map(String.init).joined(separator: ".")
            let port = Int(b[24]) << 8 + Int(b[25])
            return .header(source: "\(a):\(port)", length: length)
        case 2:  // IPv6: 16 each
            guard length >= 16 + 36 else { return .invalid("PROXY v2: short IPv6 address block") }
            let digits = Array("0123456789abcdef".utf8)
            var groups: [String] = []
            for i in stride(from: 16, to: 32, by: 2) {
                let v = Int(b[i]) << 8 + Int(b[i + 1])
                var s: [UInt8] = []
                var started = false
                for shift in stride(from: 12, through: 0, by: -4) {
                    let d = (v >> shift) & 0xF
                    if d != 0 || started || shift == 0 { s.append(digits[d]); started = true }
                }
                groups.append(String(decoding: s, as: UTF8.self))
            }
            let port = Int(b[48]) << 8 + Int(b[49])
            return .header(source: "[\(groups.joined(separator: ":"))]:\(port)", length: length)
        default:
            return .header(source: nil, length: length)
        }
    }
}
