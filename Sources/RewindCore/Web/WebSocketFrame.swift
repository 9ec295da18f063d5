/// The header of a frame the server sends (RFC 6455 section 5.2): FIN and
/// opcode, then the payload length in 7, 16 or 64 bits. Server frames are
/// never masked, so the payload follows as it is — the bytes of a push,
/// encoded once, go to every WebSocket subscriber unchanged, each behind a
/// header of 2 to 10 bytes.
public enum WebSocketFrame {
    public enum Opcode: UInt8, Sendable {
        case continuation = 0x0, text = 0x1, binary = 0x2, close = 0x8, ping = 0x9, pong = 0xA
    }

    public static func header(_ opcode: Opcode, fin: Bool = true, length: Int) -> [UInt8] {
        let first = (fin ? 0x80 : 0) | opcode.rawValue
        if length < 126 { return [first, UInt8(length)] }
        if length <= 0xFFFF { return [first, 126, UInt8(length >> 8), UInt8(length & 0xFF)] }
        var h: [UInt8] = [first, 127]
        for shift in stride(from: 56, through: 0, by: -8) { h.append(UInt8(truncatingIfNeeded: UInt64(length) >> UInt64(shift))) }
        return h
    }

    /// Where the last whole frame in `bytes[from...]` ends (client frames:
    /// masked or not, the mask counted when its bit is set). The transport
    /// gives its frame parser whole frames only, so that between reads no
    /// state is held but what a message in fragments needs. A header that
    /// declares more than `maxPayload` bytes ends the scan at the end of the
    /// bytes: the parser refuses it at once (1009) instead of it being waited for.
    public static func wholeFramesEnd(_ bytes: [UInt8], from: Int, maxPayload: Int) -> Int {
        var i = from
        while bytes.count - i >= 2 {
            let len7 = Int(bytes[i + 1] & 0x7F)
            let extra = len7 == 126 ? 2 : len7 == 127 ? 8 : 0
            let mask = bytes[i + 1] & 0x80 != 0 ? 4 : 0
            guard bytes.count - i >= 2 + extra else { break }
            var length = UInt64(len7)
            if extra > 0 { length = bytes[(i + 2)..<(i + 2 + extra)].reduce(0) { $0 << 8 | UInt64($1) } }
            guard length <= UInt64(maxPayload) else { return bytes.count }
            let total = 2 + extra + mask + Int(length)
            guard bytes.count - i >= total else { break }
            i += total
        }
        return i
    }

    /// The close code a `bye` with `reason` ends with (PROTOCOL.md): 1001
    /// shutting down, 1008 policy (`unauthorized`, `bad_frames`), 1013 try
    /// again later (`rate_limited`, `slow`), else 1000.
    public static func closeCode(forBye reason: String) -> UInt16 {
        switch reason {
        case "shutdown": return 1001
        case "unauthorized", "bad_frames": return 1008
        case "rate_limited", "slow": return 1013
        default: return 1000
        }
    }
}
