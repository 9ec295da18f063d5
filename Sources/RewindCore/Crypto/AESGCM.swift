import COpenSSL
import Synchronization

/// AES-256-GCM over OpenSSL's libcrypto: the one place RewindCore calls C
/// for cryptography. Sealed as nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)
/// — the layout swift-crypto's `SealedBox.combined` uses.
///
/// Why not swift-crypto here: replaying a long log opens one sealed entry per
/// event, and each `AES.GCM.open` there went through `Data`, a `SealedBox`
/// and generic code specialised at run time — about 4 µs for 100 bytes, most
/// of what encryption cost a replay (perf). Here a call is a context from
/// the fetched cipher, the key, and the bytes: no Swift allocation but the
/// output. Each call has its own context, so one key may be used from
/// several threads at once (the loop, the snapshot encoder, a reader).
enum AESGCM {
    static let nonceBytes = 12, tagBytes = 16

    /// Fetched once: OpenSSL 3 looks a cipher up by name on every init otherwise.
    nonisolated(unsafe) private static let cipher: OpaquePointer = {
        guard let c = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil) else { preconditionFailure("libcrypto has no AES-256-GCM") }
        return c
    }()

    /// Random bytes for nonces, drawn from libcrypto 4 KiB at a time: one
    /// `RAND_bytes` call per seal was a quarter of sealing's cost (callgrind).
    /// Every nonce is still 12 bytes of libcrypto's random output, used once.
    private static let nonces = Mutex(NoncePool())

    struct NoncePool: ~Copyable {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096

        mutating func take(into out: UnsafeMutablePointer<UInt8>) {
            if used + nonceBytes > bytes.count {
                let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
                guard ok == 1 else { preconditionFailure("libcrypto's random generator failed") }
                used = 0
            }
            bytes.withUnsafeBufferPointer { out.update(from: $0.baseAddress! + used, count: nonceBytes) }
            // Never handed out twice, not even from memory.
            for i in used..<used + nonceBytes { bytes[i] = 0 }
            used += nonceBytes
        }
    }

    /// Seals `plain` with `key` (32 bytes) and a fresh random nonce.
    static func seal(_ plain: UnsafeRawBufferPointer, key: [UInt8], aad: [UInt8]) -> [UInt8] {
        let total = nonceBytes + plain.count + tagBytes
        return [UInt8](unsafeUninitializedCapacity: total) { out, count in
            guard let ctx = EVP_CIPHER_CTX_new() else { preconditionFailure("out of memory") }
            defer { EVP_CIPHER_CTX_free(ctx) }
            let base = out.baseAddress!
            var n: Int32 = 0
            nonces.withLock { $0.take(into: base) }
            guard EVP_EncryptInit_ex2(ctx, cipher, key, base, nil) == 1,
                  aad.withUnsafeBufferPointer({ EVP_EncryptUpdate(ctx, nil, &n, $0.baseAddress, Int32($0.count)) }) == 1,
                  EVP_EncryptUpdate(ctx, base + nonceBytes, &n, plain.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                    Int32(plain.count)) == 1,
                  EVP_EncryptFinal_ex(ctx, base + nonceBytes + Int(n), &n) == 1,
                  EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagBytes), base + nonceBytes + plain.count) == 1
            else { preconditionFailure("AES-256-GCM seal failed in libcrypto") }
            count = total
        }
    }

    /// The plain bytes of `sealed`, or nil when it does not authenticate
    /// (changed, another key, or other authenticated data).
    static func open(_ sealed: [UInt8], key: [UInt8], aad: [UInt8]) -> [UInt8]? {
        guard sealed.count >= nonceBytes + tagBytes else { return nil }
        let length = sealed.count - nonceBytes - tagBytes
        var ok = false
        let plain = [UInt8](unsafeUninitializedCapacity: max(length, 1)) { out, count in
            count = 0
            guard let ctx = EVP_CIPHER_CTX_new() else { return }
            defer { EVP_CIPHER_CTX_free(ctx) }
            sealed.withUnsafeBufferPointer { s in
                let base = s.baseAddress!
                var n: Int32 = 0
                var tag = Array(s[(nonceBytes + length)...])
                guard EVP_DecryptInit_ex2(ctx, cipher, key, base, nil) == 1,
                      aad.withUnsafeBufferPointer({ EVP_DecryptUpdate(ctx, nil, &n, $0.baseAddress, Int32($0.count)) }) == 1,
                      EVP_DecryptUpdate(ctx, out.baseAddress, &n, base + nonceBytes, Int32(length)) == 1,
                      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagBytes), &tag) == 1,
                      EVP_DecryptFinal_ex(ctx, out.baseAddress! + Int(n), &n) == 1
                else { return }
                ok = true
            }
            count = ok ? length : 0
        }
        return ok ? plain : nil
    }
}
