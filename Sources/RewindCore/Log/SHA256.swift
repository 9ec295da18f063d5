import Crypto

/// SHA-256 for the log's hash chain, snapshot digests and ids: BoringSSL's
/// (swift-crypto), which uses the CPU's SHA extensions where it has them.
/// The server computes it as it appends, and every replay and `verify`
/// checks it, so it is on the read path's hottest loop. This type keeps the
/// core's small API (bytes in, 32 bytes out) so callers never see Crypto's
/// types. Checked against the standard vectors and PostgreSQL's `sha256()`
/// (LogChainTests, and the chain SQL's `rewind_entry_hash`).
/// Not Sendable: the running state is a BoringSSL context (one per hash).
public struct SHA256 {
    private var inner = Crypto.SHA256()

    public init() {}

    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        // Copied as one buffer: iterating the digest as a sequence cost ~1,800 instructions (callgrind).
        Crypto.SHA256.hash(data: bytes).withUnsafeBytes { [UInt8]($0) }
    }

    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var h = Crypto.SHA256()
        h.update(bufferPointer: bytes)
        return h.finalize().withUnsafeBytes { [UInt8]($0) }
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { inner.update(bufferPointer: $0) }
    }

    public mutating func update(_ bytes: UnsafeBufferPointer<UInt8>) {
        inner.update(bufferPointer: UnsafeRawBufferPointer(bytes))
    }

    public mutating func update(_ s: String) {
        var s = s
        s.withUTF8 { update($0) }
    }

    public mutating func finish() -> [UInt8] {
        inner.finalize().withUnsafeBytes { [UInt8]($0) }
    }

    /// The digest read where it lies (no array made of it).
    public mutating func finish<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        inner.finalize().withUnsafeBytes(body)
    }
}
