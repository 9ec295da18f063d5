import COpenSSL
import Synchronization

/// AES-256-GCM over OpenSSL's libcrypto: the one place RewindCore calls C
/// for cryptography. Sealed as nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)
/// — the layout swift-crypto's `SealedBox.combined` uses.
///
/// Why not swift-crypto here: replaying a long log opens one sealed entry per
/// event, and each `AES.GCM.open` there went through `Data`, a `SealedBox`
/// and generic code specialised at run time — about 4 µs for 100 bytes, most
/// of what encryption cost a replay (perf). Here a call takes a context
/// already keyed (`Key`), gives it the nonce, and writes the output: no
/// Swift allocation but the output's, and no key schedule per call.
enum AESGCM {
    static let nonceBytes = 12, tagBytes = 16

    /// Fetched once: OpenSSL 3 looks a cipher up by name on every init otherwise.
    nonisolated(unsafe) private static let cipher: OpaquePointer = {
        guard let c = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil) else { preconditionFailure("libcrypto has no AES-256-GCM") }
        return c
    }()

    /// A 32-byte key and the libcrypto contexts keyed with it. Setting a key
    /// (its AES schedule and GHASH table) was a third of each seal and open
    /// (callgrind: ~3,400 instructions of ~10,000): a context is keyed once
    /// and then given only a nonce per message (`EVP_*Init_ex2` with no
    /// key), as libcrypto allows. A context serves one call at a time: each
    /// call takes one from the pool (making one if none is free, as when
    /// the loop, a snapshot encoder and page readers use a key at once) and
    /// puts it back.
    final class Key: @unchecked Sendable {  // the contexts are handed over under the lock, used by one thread at a time
        private let bytes: [UInt8]
        /// Free contexts (their addresses), keyed for sealing and for opening.
        private let free = Mutex<(sealing: [UInt], opening: [UInt])>(([], []))

        init(_ bytes: [UInt8]) {
            precondition(bytes.count == 32, "an AES-256 key is 32 bytes")
            self.bytes = bytes
        }

        deinit {
            let all = free.withLock { $0.sealing + $0.opening }
            for c in all { EVP_CIPHER_CTX_free(OpaquePointer(bitPattern: c)) }
        }

        /// Runs `body` with a context keyed for sealing (`encrypt`) or opening; nil: libcrypto failed to make one.
        func withContext<R>(encrypt: Bool, _ body: (OpaquePointer) -> R) -> R? {
            var ctx = free.withLock { encrypt ? $0.sealing.popLast() : $0.opening.popLast() }.flatMap { OpaquePointer(bitPattern: $0) }
            if ctx == nil {
                guard let made = EVP_CIPHER_CTX_new() else { return nil }
                let keyed = bytes.withUnsafeBufferPointer {
                    encrypt ? EVP_EncryptInit_ex2(made, cipher, $0.baseAddress, nil, nil) : EVP_DecryptInit_ex2(made, cipher, $0.baseAddress, nil, nil)
                }
                guard keyed == 1 else { EVP_CIPHER_CTX_free(made); return nil }
                ctx = made
            }
            let result = body(ctx!)
            let address = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(ctx!)))
            free.withLock { if encrypt { $0.sealing.append(address) } else { $0.opening.append(address) } }
            return result
        }
    }

    /// Seals `plain` with `key` and a fresh random nonce.
    static func seal(_ plain: UnsafeRawBufferPointer, key: Key, aad: UnsafeRawBufferPointer) -> [UInt8] {
        let total = nonceBytes + plain.count + tagBytes
        return [UInt8](unsafeUninitializedCapacity: total) { out, count in
            let base = out.baseAddress!
            RandomBytes.fill(UnsafeMutableRawBufferPointer(start: base, count: nonceBytes))
            let sealed = key.withContext(encrypt: true) { ctx in
                var n: Int32 = 0
                return EVP_EncryptInit_ex2(ctx, nil, nil, base, nil) == 1
                    && EVP_EncryptUpdate(ctx, nil, &n, aad.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(aad.count)) == 1
                    && EVP_EncryptUpdate(ctx, base + nonceBytes, &n, plain.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                         Int32(plain.count)) == 1
                    && EVP_EncryptFinal_ex(ctx, base + nonceBytes + Int(n), &n) == 1
                    && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagBytes), base + nonceBytes + plain.count) == 1
            }
            guard sealed == true else { preconditionFailure("AES-256-GCM seal failed in libcrypto") }
            count = total
        }
    }

    /// The plain bytes of `sealed`, or nil when it does not authenticate
    /// (changed, another key, or other authenticated data).
    static func open(_ sealed: [UInt8], key: Key, aad: UnsafeRawBufferPointer) -> [UInt8]? {
        guard sealed.count >= nonceBytes + tagBytes else { return nil }
        let length = sealed.count - nonceBytes - tagBytes
        var ok = false
        let plain = [UInt8](unsafeUninitializedCapacity: max(length, 1)) { out, count in
            count = 0
            ok = key.withContext(encrypt: false) { ctx in
                sealed.withUnsafeBufferPointer { s in
                    let base = s.baseAddress!
                    var n: Int32 = 0
                    let tag = UnsafeMutableRawPointer(mutating: base + nonceBytes + length)  // only read (SET_TAG copies it)
                    // A context whose last message did not authenticate is
                    // given a new nonce like any other: Init resets the GCM state.
                    return EVP_DecryptInit_ex2(ctx, nil, nil, base, nil) == 1
                        && EVP_DecryptUpdate(ctx, nil, &n, aad.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(aad.count)) == 1
                        && EVP_DecryptUpdate(ctx, out.baseAddress, &n, base + nonceBytes, Int32(length)) == 1
                        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagBytes), tag) == 1
                        && EVP_DecryptFinal_ex(ctx, out.baseAddress! + Int(n), &n) == 1
                }
            } ?? false
            count = ok ? length : 0
        }
        return ok ? plain : nil
    }
}
