import Crypto

/// Seals a document's content with its data key (SPEC section 15): the
/// text the log stores for an event's ops and inverse, and snapshots.
///
/// AES-256-GCM (BoringSSL, with AES-NI where the CPU has it), a fresh random
/// 96-bit nonce per field, and the document and the field's name as the
/// authenticated data, so a sealed field cannot be moved to another
/// document or column unnoticed. The stored text is
///
///     ~<key id>:<base64 of nonce, ciphertext and tag>
///
/// — never valid JSON (ops start with `[`), so sealed and plain text are told
/// apart by the first byte, and the hash chain, which covers the stored
/// text, covers the key id and the ciphertext. Purging the document destroys
/// its wrapped key; the sealed text then opens for no one.
///
/// The one thing here that is not deterministic is the nonce: the core
/// stays free of I/O, and tests that need identical rows run without a cipher.
public final class DocumentCipher: @unchecked Sendable {  // immutable after init; SymmetricKey is a value without Sendable
    public let doc: String
    public let keyID: String
    private let key: SymmetricKey
    private let fingerprintKey: SymmetricKey

    /// The fields a document's key seals, named in the authenticated data.
    public enum Field: String, Sendable {
        case ops, inverse, snapshot
    }

    public static let keyBytes = 32

    public init(doc: String, keyID: String, key bytes: [UInt8]) {
        precondition(bytes.count == Self.keyBytes, "a data key is 32 bytes")
        self.doc = doc
        self.keyID = keyID
        key = SymmetricKey(data: bytes)
        // A separate key for fingerprints, so a MAC never shares a key with the cipher.
        fingerprintKey = SymmetricKey(data: Array(HMAC<Crypto.SHA256>.authenticationCode(for: Array("rewind fingerprint".utf8), using: key)))
    }

    /// 32 random bytes: a new data key.
    public static func newKey() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }

    /// A short random id naming a key (hex).
    public static func newKeyID() -> String {
        Hex.string(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0.prefix(6)) })
    }

    public static func isSealed(_ stored: String) -> Bool { stored.utf8.first == UInt8(ascii: "~") }

    public func seal(_ plain: String, _ field: Field) -> String {
        let box: AES.GCM.SealedBox
        do { box = try AES.GCM.seal(Array(plain.utf8), using: key, authenticating: aad(field)) } catch {
            // Only a key of the wrong size can fail, and the init refuses those.
            preconditionFailure("AES-GCM seal failed: \(error)")
        }
        return "~" + keyID + ":" + Base64.encode(Array(box.combined!))
    }

    public func open(_ stored: String, _ field: Field) throws(RewindError) -> String {
        let u = stored.utf8
        guard u.first == UInt8(ascii: "~"), let colon = u.firstIndex(of: UInt8(ascii: ":")) else {
            throw RewindError(.internal, "\(field.rawValue) of \(doc) is not sealed text")
        }
        let id = String(decoding: u[u.index(after: u.startIndex)..<colon], as: UTF8.self)
        guard id == keyID else {
            throw RewindError(.internal, "\(field.rawValue) of \(doc) is sealed with key \(id), not the document's key \(keyID)")
        }
        guard let bytes = Base64.decode(String(decoding: u[u.index(after: colon)...], as: UTF8.self)), bytes.count >= 28 else {
            throw RewindError(.internal, "\(field.rawValue) of \(doc) is not valid sealed text")
        }
        do {
            let box = try AES.GCM.SealedBox(combined: bytes)
            let plain = try AES.GCM.open(box, using: key, authenticating: aad(field))
            return String(decoding: plain, as: UTF8.self)
        } catch {
            throw RewindError(.internal, "\(field.rawValue) of \(doc) does not open with its key: it was changed, or sealed for another document or field")
        }
    }

    /// A keyed fingerprint (64 bits of HMAC-SHA-256, hex): what tells a
    /// resubmission from a different request with the same `tx`, without
    /// storing an unkeyed hash of the content (short text could be guessed
    /// back from one).
    public func fingerprint(_ bytes: [UInt8]) -> String {
        let mac = HMAC<Crypto.SHA256>.authenticationCode(for: bytes, using: fingerprintKey)
        return Hex.string(Array(Array(mac).prefix(8)))
    }

    private func aad(_ field: Field) -> [UInt8] { Array("rewind \(field.rawValue) of \(doc)".utf8) }
}
