import Crypto

/// Seals a document's content with its data key (SPEC section 15): the
/// text the log stores for an event's ops and inverse, and snapshots.
///
/// AES-256-GCM (`AESGCM`: OpenSSL's libcrypto, with AES-NI where the CPU has it), a fresh random
/// 96-bit nonce per sealing, and the document and what is sealed as the
/// authenticated data, so sealed text cannot be moved to another document
/// or column unnoticed. The stored text is
///
///     ~<key id>:<base64 of nonce, ciphertext and tag>
///
/// — never valid JSON (ops start with `[`), so sealed and plain text are told
/// apart by the first byte, and the hash chain, which covers the stored
/// text, covers the key id and the ciphertext. An event's ops and inverse
/// are sealed together, in its `ops` column (the two JSON texts joined by a
/// newline, which JSON text never holds raw); its `inverse` column then holds
/// just `~`. One sealing per event, not two: on replay, opening is most of
/// what encryption costs. Purging the document destroys its wrapped key; the
/// sealed text then opens for no one.
///
/// The one thing here that is not deterministic is the nonce: the core
/// stays free of I/O, and tests that need identical rows run without a cipher.
public final class DocumentCipher: @unchecked Sendable {  // immutable after init; SymmetricKey is a value without Sendable
    public let doc: String
    public let keyID: String
    private let key: AESGCM.Key
    private let fingerprintKey: [UInt8]
    private let entryAAD: [UInt8], snapshotAAD: [UInt8]

    /// What a document's key seals, named in the authenticated data.
    public enum Field: String, Sendable {
        /// An event's ops and inverse, together (`sealEntry`).
        case entry
        case snapshot
    }

    /// The `inverse` column of an event whose inverse is sealed with its ops.
    public static let inverseInOps = "~"

    public static let keyBytes = 32

    public init(doc: String, keyID: String, key bytes: [UInt8]) {
        precondition(bytes.count == Self.keyBytes, "a data key is 32 bytes")
        self.doc = doc
        self.keyID = keyID
        key = AESGCM.Key(bytes)
        // A separate key for fingerprints, so a MAC never shares a key with the cipher.
        fingerprintKey = Array(HMAC<Crypto.SHA256>.authenticationCode(for: Array("rewind fingerprint".utf8), using: SymmetricKey(data: bytes)))
        entryAAD = Array("rewind \(Field.entry.rawValue) of \(doc)".utf8)
        snapshotAAD = Array("rewind \(Field.snapshot.rawValue) of \(doc)".utf8)
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
        var plain = plain
        return plain.withUTF8 { seal(UnsafeRawBufferPointer($0), field) }
    }

    /// `~<key id>:<base64>`, written into the string at once (no pieces joined).
    private func seal(_ plain: UnsafeRawBufferPointer, _ field: Field) -> String {
        let sealed = AESGCM.seal(plain, key: key, aad: aad(field))
        let prefix = keyID.utf8.count + 2
        return String(unsafeUninitializedCapacity: prefix + Base64.encodedCount(sealed.count)) { out in
            out[0] = UInt8(ascii: "~")
            _ = UnsafeMutableBufferPointer(rebasing: out[1...]).initialize(fromContentsOf: keyID.utf8)
            out[prefix - 1] = UInt8(ascii: ":")
            return prefix + Base64.encode(sealed, into: UnsafeMutableBufferPointer(rebasing: out[prefix...]))
        }
    }

    public func open(_ stored: String, _ field: Field) throws(RewindError) -> String {
        String(decoding: field == .snapshot ? try openSnapshotBytes(stored) : try openBytes(stored, field), as: UTF8.self)
    }

    /// A snapshot's JSON text, compressed (`LZ4`) and sealed. The sealed bytes
    /// are `0x01`, the text's length (4 bytes, little-endian) and the LZ4
    /// block; JSON text never starts with `0x01`, so snapshots sealed as plain
    /// text (before compression, or when it would not shrink) open as before.
    public func sealSnapshot(_ json: String) -> String {
        var json = json
        return json.withUTF8 { text in
            let raw = UnsafeRawBufferPointer(text)
            guard text.count <= Self.maxSnapshotBytes, let block = LZ4.compress(raw) else { return seal(raw, .snapshot) }
            var plain: [UInt8] = [Self.compressedSnapshot]
            plain.reserveCapacity(5 + block.count)
            withUnsafeBytes(of: UInt32(text.count).littleEndian) { plain += $0 }
            plain += block
            return plain.withUnsafeBytes { seal($0, .snapshot) }
        }
    }

    /// A snapshot's JSON text as bytes, from what `sealSnapshot` (or `seal(_, .snapshot)`) stored.
    public func openSnapshotBytes(_ stored: String) throws(RewindError) -> [UInt8] {
        let plain = try openBytes(stored, .snapshot)
        guard plain.first == Self.compressedSnapshot else { return plain }
        guard plain.count > 5 else { throw RewindError(.internal, "a compressed snapshot of \(doc) is cut short") }
        let count = Int(plain[1]) | Int(plain[2]) << 8 | Int(plain[3]) << 16 | Int(plain[4]) << 24
        let text = count <= Self.maxSnapshotBytes ? plain.withUnsafeBytes { LZ4.decompress(UnsafeRawBufferPointer(rebasing: $0[5...]), count: count) } : nil
        guard let text else { throw RewindError(.internal, "a compressed snapshot of \(doc) does not decompress to its \(count) bytes") }
        return text
    }

    /// The first sealed byte of a compressed snapshot.
    static let compressedSnapshot: UInt8 = 0x01
    /// Snapshots larger than this are sealed uncompressed (a length must fit in 4 bytes, and LZ4 takes up to ~2 GB).
    static let maxSnapshotBytes = 1 << 30

    /// An event's ops and inverse (JSON text each), sealed as one.
    public func sealEntry(ops: String, inverse: String) -> String {
        var plain: [UInt8] = []
        plain.reserveCapacity(ops.utf8.count + 1 + inverse.utf8.count)
        plain += ops.utf8
        plain.append(0x0A)
        plain += inverse.utf8
        return plain.withUnsafeBytes { seal($0, .entry) }
    }

    /// An event's stored `ops` and `inverse` columns for plain ones (sealed ones stay as they are).
    public func sealed(ops: String, inverse: String) -> (ops: String, inverse: String) {
        DocumentCipher.isSealed(ops) ? (ops, inverse) : (sealEntry(ops: ops, inverse: inverse), Self.inverseInOps)
    }

    /// The plain ops and inverse of an event's stored columns: opened with
    /// `cipher` when sealed; plain text (from before encryption) as it is.
    public static func plain(ops: String, inverse: String, cipher: DocumentCipher?, doc: String) throws(RewindError) -> (ops: String, inverse: String) {
        guard isSealed(ops) else { return (ops, inverse) }
        guard let cipher else { throw contentWithoutKey(doc) }
        guard inverse == inverseInOps else { throw RewindError(.internal, "an event of \(doc) has sealed ops and an inverse column that is not \"~\"") }
        return try cipher.openEntry(ops)
    }

    /// Content met without its key: purged, or read without the master key.
    public static func contentWithoutKey(_ doc: String) -> RewindError {
        RewindError(.forbidden, "the content of \(doc) is encrypted and its key was not given (a purged document, or no --master-key-file)")
    }

    /// The opened bytes of an event sealed with `sealEntry`, and where its
    /// inverse starts (after the newline): for a reader that parses both
    /// without making text of them first.
    public func openEntryBytes(_ stored: String) throws(RewindError) -> (bytes: [UInt8], newline: Int) {
        let plain = try openBytes(stored, .entry)
        guard let nl = plain.firstIndex(of: UInt8(ascii: "\n")) else {
            throw RewindError(.internal, "sealed entry of \(doc) holds no inverse")
        }
        return (plain, nl)
    }

    /// The ops and inverse JSON text of an event sealed with `sealEntry`.
    public func openEntry(_ stored: String) throws(RewindError) -> (ops: String, inverse: String) {
        let (plain, nl) = try openEntryBytes(stored)
        return (String(decoding: plain[..<nl], as: UTF8.self), String(decoding: plain[(nl + 1)...], as: UTF8.self))
    }

    private func openBytes(_ stored: String, _ field: Field) throws(RewindError) -> [UInt8] {
        var stored = stored
        let opened: [UInt8]? = stored.withUTF8 { u -> [UInt8]? in
            guard u.first == UInt8(ascii: "~"), let colon = u.firstIndex(of: UInt8(ascii: ":")),
                  u[1..<colon].elementsEqual(keyID.utf8),
                  let bytes = Base64.decode(UnsafeBufferPointer(rebasing: u[(colon + 1)...]))
            else { return nil }
            return AESGCM.open(bytes, key: key, aad: aad(field))
        }
        guard let opened else { throw whyNot(stored, field) }
        return opened
    }

    /// Why sealed text did not open (the slow path, for the message).
    private func whyNot(_ stored: String, _ field: Field) -> RewindError {
        let u = Array(stored.utf8)
        guard u.first == UInt8(ascii: "~"), let colon = u.firstIndex(of: UInt8(ascii: ":")) else {
            return RewindError(.internal, "\(field.rawValue) of \(doc) is not sealed text")
        }
        let id = String(decoding: u[1..<colon], as: UTF8.self)
        guard id == keyID else {
            return RewindError(.internal, "\(field.rawValue) of \(doc) is sealed with key \(id), not the document's key \(keyID)")
        }
        return RewindError(.internal, "\(field.rawValue) of \(doc) does not open with its key: it was changed, or sealed for another document or field")
    }

    /// A keyed fingerprint (64 bits of SHA-256 over a key of its own, then
    /// the content; hex): what tells a resubmission from a different request
    /// with the same `tx`, without storing an unkeyed hash of the content
    /// (short text could be guessed back from one). Computed for every
    /// submit: one SHA-256, not swift-crypto's HMAC (4.7 % of a busy
    /// server's time, perf); it is only ever compared for equality, so
    /// length extension is no concern.
    public func fingerprint(_ bytes: [UInt8]) -> String {
        var h = SHA256()
        h.update(fingerprintKey)
        h.update(bytes)
        return h.finish { Hex.string(UnsafeRawBufferPointer(rebasing: $0.prefix(8))) }
    }

    private func aad(_ field: Field) -> [UInt8] { field == .entry ? entryAAD : snapshotAAD }
}
