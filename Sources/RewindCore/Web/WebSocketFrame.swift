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
