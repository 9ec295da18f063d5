import COpenSSL
import Synchronization

/// Random bytes from libcrypto's generator (a CSPRNG), drawn 4 KiB at a
/// time: one call per nonce or id was a quarter of sealing's cost
/// (callgrind), and the system's generator is a `getrandom` call per 8
/// bytes. Every byte is handed out once and then wiped from the pool.
/// Used for AES-GCM nonces and event ids.
public enum RandomBytes {
    private static let pool = Mutex(Pool())

    public static func fill(_ out: UnsafeMutableRawBufferPointer) {
        pool.withLock { $0.take(into: out) }
    }

    private struct Pool: ~Copyable {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096

        mutating func take(into out: UnsafeMutableRawBufferPointer) {
            var written = 0
            while written < out.count {
                if used == bytes.count {
                    let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
                    guard ok == 1 else { preconditionFailure("libcrypto's random generator failed") }
                    used = 0
                }
                let n = min(out.count - written, bytes.count - used)
                bytes.withUnsafeMutableBufferPointer { b in
                    (out.baseAddress! + written).copyMemory(from: b.baseAddress! + used, byteCount: n)
                    (b.baseAddress! + used).update(repeating: 0, count: n)  // never handed out twice, not even from memory
                }
                used += n
                written += n
            }
        }
    }
}
