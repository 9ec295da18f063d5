/// SHA-256 (FIPS 180-4), in Swift: the hash chain of the log is computed by
/// the server as it appends, and checked by every replay and `verify`, so
/// the core needs it without I/O or a C library. Checked against the
/// standard test vectors and against PostgreSQL's `sha256()`.
public struct SHA256: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)
    private var block = [UInt8](repeating: 0, count: 64)
    private var blockCount = 0
    private var length: UInt64 = 0

    public init() {}

    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var h = SHA256()
        h.update(bytes)
        return h.finish()
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { update($0) }
    }

    public mutating func update(_ bytes: UnsafeBufferPointer<UInt8>) {
        let n = bytes.count
        guard n > 0, let src = bytes.baseAddress else { return }
        length &+= UInt64(n)
        var i = 0
        if blockCount > 0 {
            // Top up the partial block (copied at once, not byte by byte).
            let start = blockCount, take = Swift.min(64 - start, n)
            block.withUnsafeMutableBufferPointer { $0.baseAddress!.advanced(by: start).update(from: src, count: take) }
            blockCount += take
            i = take
            if blockCount == 64 {
                block.withUnsafeBufferPointer { compress($0.baseAddress!) }
                blockCount = 0
            }
        }
        while n - i >= 64 {
            compress(src + i)
            i += 64
        }
        if i < n {
            let from = i
            block.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: src + from, count: n - from) }
            blockCount = n - i
        }
    }

    public mutating func update(_ s: String) {
        var s = s
        s.withUTF8 { update($0) }
    }

    public mutating func finish() -> [UInt8] {
        let bits = length &* 8
        // 0x80, zeros up to 56 mod 64, the length in bits (big-endian): one
        // fixed buffer, no arrays built per call.
        let rest = (blockCount + 1) % 64
        let padCount = 1 + (rest <= 56 ? 56 - rest : 120 - rest) + 8
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { pad in
            pad.initialize(repeating: 0)
            pad[0] = 0x80
            for k in 0..<8 { pad[padCount - 8 + k] = UInt8(truncatingIfNeeded: bits >> (UInt64(7 - k) * 8)) }
            update(UnsafeBufferPointer(UnsafeMutableBufferPointer(rebasing: pad[..<padCount])))
        }
        let words = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        return [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            for (i, w) in words.enumerated() {
                out[4 * i] = UInt8(w >> 24)
                out[4 * i + 1] = UInt8(truncatingIfNeeded: w >> 16)
                out[4 * i + 2] = UInt8(truncatingIfNeeded: w >> 8)
                out[4 * i + 3] = UInt8(truncatingIfNeeded: w)
            }
            count = 32
        }
    }

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private mutating func compress(_ p: UnsafePointer<UInt8>) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for t in 0..<16 {
                w[t] = UInt32(p[4 * t]) << 24 | UInt32(p[4 * t + 1]) << 16 | UInt32(p[4 * t + 2]) << 8 | UInt32(p[4 * t + 3])
            }
            for t in 16..<64 {
                let a = w[t - 15], b = w[t - 2]
                let s0 = (a >> 7 | a << 25) ^ (a >> 18 | a << 14) ^ (a >> 3)
                let s1 = (b >> 17 | b << 15) ^ (b >> 19 | b << 13) ^ (b >> 10)
                w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = state
            Self.k.withUnsafeBufferPointer { k in
                for t in 0..<64 {
                    let s1 = (e >> 6 | e << 26) ^ (e >> 11 | e << 21) ^ (e >> 25 | e << 7)
                    let ch = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ ch &+ k[t] &+ w[t]
                    let s0 = (a >> 2 | a << 30) ^ (a >> 13 | a << 19) ^ (a >> 22 | a << 10)
                    let maj = (a & b) ^ (a & c) ^ (b & c)
                    h = g; g = f; f = e; e = d &+ t1; d = c; c = b; b = a; a = t1 &+ s0 &+ maj
                }
            }
            state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
        }
    }
}
