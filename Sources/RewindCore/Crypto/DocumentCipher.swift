import Crypto

/// Seals a document's content with its data key (SPEC section 15): the
/// text the log stores for an event's ops and inverse, and snapshots.
///
/// AES-256-GCM (`AESGCM`: OpenSSL's libcrypto, with AES-NI where the CPU has it), a fresh random
/// 96-bit nonce per sealing, and where the text belongs as the
/// authenticated data, so sealed text cannot be moved unnoticed. The stored
/// text is one of
///
///     ~<key id>.2:<base64 of nonce, ciphertext and tag>   an entry, bound to its place
///     ~<key id>:<base64 of nonce, ciphertext and tag>     a snapshot; an entry sealed before (unbound)
///
/// — never valid JSON (ops start with `[`), so sealed and plain text are told
/// apart by the first byte, and the hash chain, which covers the stored
/// text, covers the key id, the form and the ciphertext. Key ids are hex
/// (`newKeyID`), and the text before the colon is compared with the
/// document's own key id, bare or with `.2`: the two forms cannot be taken
/// for one another.
///
/// What each form is bound to (its authenticated data):
///
/// - An entry (`.2`): its place — the document, its position `seq` and its
///   entry id — each as its length in bytes (8 bytes, big-endian) and then
///   its UTF-8 bytes (the seq in decimal), after the label `rewind entry at`
///   encoded the same way: the encoding of the hash chain (`LogRow`), so no
///   field can run into the next. The chain is not keyed: a superuser
///   without the key can rewrite it after any change. Bound to its place,
///   an entry's sealed text moved or copied to another entry, even of the
///   same document, does not open there, and `verify` with the key names it.
/// - An unbound entry (what releases before wrote): `rewind entry of <doc>` —
///   the document only. Still opened, so that databases sealed before keep
///   working; `rewind admin migrate` with the master key binds them.
/// - A snapshot: `rewind snapshot of <doc>`. A snapshot is checked against
///   the chain by its digest and the head hash it names, and against the
///   state replayed there.
///
/// An event's ops and inverse are sealed together, in its `ops` column (the
/// two JSON texts joined by a newline, which JSON text never holds raw); its
/// `inverse` column then holds just `~`. One sealing per event, not two: on
/// replay, opening is most of what encryption costs. Purging the document
/// destroys its wrapped key; the sealed text then opens for no one.
///
/// The one thing here that is not deterministic is the nonce: the core
/// stays free of I/O, and tests that need identical rows run without a cipher.
public final class DocumentCipher: @unchecked Sendable {  // immutable after init; SymmetricKey is a value without Sendable
    public let doc: String
    public let keyID: String
    private let key: AESGCM.Key
    private let fingerprintKey: [UInt8]
    private let unboundEntryAAD: [UInt8], snapshotAAD: [UInt8]
    /// The fields of a bound entry's authenticated data that do not change: the label and the document.
    private let placePrefix: [UInt8]

    /// What a document's key seals, named in the authenticated data.
    public enum Field: String, Sendable {
        /// An event's ops and inverse, together (`sealEntry`).
        case entry
        case snapshot
    }

    /// The `inverse` column of an event whose inverse is sealed with its ops.
    public static let inverseInOps = "~"

    public static let keyBytes = 32

    /// What follows the key id in an entry bound to its place (`~<key id>.2:`).
    static let boundMark: [UInt8] = Array(".2".utf8)

    public init(doc: String, keyID: String, key bytes: [UInt8]) {
        precondition(bytes.count == Self.keyBytes, "a data key is 32 bytes")
        self.doc = doc
        self.keyID = keyID
        key = AESGCM.Key(bytes)
        // A separate key for fingerprints, so a MAC never shares a key with the cipher.
        fingerprintKey = Array(HMAC<Crypto.SHA256>.authenticationCode(for: Array("rewind fingerprint".utf8), using: SymmetricKey(data: bytes)))
        unboundEntryAAD = Array("rewind \(Field.entry.rawValue) of \(doc)".utf8)
        snapshotAAD = Array("rewind \(Field.snapshot.rawValue) of \(doc)".utf8)
        var prefix: [UInt8] = []
        for field in ["rewind entry at", doc] {
            withUnsafeBytes(of: UInt64(field.utf8.count).bigEndian) { prefix += $0 }
            prefix += field.utf8
        }
        placePrefix = prefix
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

    /// Sealed text in the form of entries bound to their place (`~<key id>.2:…`),
    /// told without the key id (hex, so it never ends in `.2` itself): what
    /// `verify` and `migrate` count. Opening reads the form against the key id (`form`).
    public static func isBound(_ stored: String) -> Bool {
        var stored = stored
        return stored.withUTF8 { u in
            guard u.first == UInt8(ascii: "~"), let colon = u.firstIndex(of: UInt8(ascii: ":")) else { return false }
            return colon >= 1 + boundMark.count && u[(colon - boundMark.count)..<colon].elementsEqual(boundMark)
        }
    }

    /// Seals a snapshot's text as it is (`sealSnapshot` compresses it first).
    public func seal(_ plain: String, _ field: Field) -> String {
        precondition(field == .snapshot, "an entry is sealed with its place (sealEntry)")
        var plain = plain
        return plain.withUTF8 { text in snapshotAAD.withUnsafeBytes { seal(UnsafeRawBufferPointer(text), aad: $0, bound: false) } }
    }

    /// `~<key id>[.2]:<base64>`, written into the string at once (no pieces joined).
    private func seal(_ plain: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, bound: Bool) -> String {
        let sealed = AESGCM.seal(plain, key: key, aad: aad)
        let tag = keyID.utf8.count + (bound ? Self.boundMark.count : 0)
        let prefix = tag + 2
        return String(unsafeUninitializedCapacity: prefix + Base64.encodedCount(sealed.count)) { out in
            out[0] = UInt8(ascii: "~")
            var at = UnsafeMutableBufferPointer(rebasing: out[1...]).initialize(fromContentsOf: keyID.utf8) + 1
            if bound { at = UnsafeMutableBufferPointer(rebasing: out[at...]).initialize(fromContentsOf: Self.boundMark) + at }
            out[prefix - 1] = UInt8(ascii: ":")
            return prefix + Base64.encode(sealed, into: UnsafeMutableBufferPointer(rebasing: out[prefix...]))
        }
    }

    /// A snapshot's text (`field` is `.snapshot`; an entry opens with its place: `openEntry`).
    public func open(_ stored: String, _ field: Field) throws(RewindError) -> String {
        precondition(field == .snapshot, "an entry opens with its place (openEntry)")
        return String(decoding: try openSnapshotBytes(stored), as: UTF8.self)
    }

    /// A snapshot's JSON text, compressed (`LZ4`) and sealed. The sealed bytes
    /// are `0x01`, the text's length (4 bytes, little-endian) and the LZ4
    /// block; JSON text never starts with `0x01`, so snapshots sealed as plain
    /// text (before compression, or when it would not shrink) open as before.
    public func sealSnapshot(_ json: String) -> String {
        var json = json
        return json.withUTF8 { text in
            let raw = UnsafeRawBufferPointer(text)
            guard text.count <= Self.maxSnapshotBytes, let block = LZ4.compress(raw) else {
                return snapshotAAD.withUnsafeBytes { seal(raw, aad: $0, bound: false) }
            }
            var plain: [UInt8] = [Self.compressedSnapshot]
            plain.reserveCapacity(5 + block.count)
            withUnsafeBytes(of: UInt32(text.count).littleEndian) { plain += $0 }
            plain += block
            return plain.withUnsafeBytes { p in snapshotAAD.withUnsafeBytes { seal(p, aad: $0, bound: false) } }
        }
    }

    /// A snapshot's JSON text as bytes, from what `sealSnapshot` (or `seal(_, .snapshot)`) stored.
    public func openSnapshotBytes(_ stored: String) throws(RewindError) -> [UInt8] {
        let plain = try openSnapshotPlain(stored)
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

    /// An event's ops and inverse (JSON text each), sealed as one and bound
    /// to the entry's place: its position `seq` in the document's log and its id.
    public func sealEntry(ops: String, inverse: String, seq: Int64, id: String) -> String {
        entryPlain(ops: ops, inverse: inverse).withUnsafeBytes { p in withPlace(seq: seq, id: id) { seal(p, aad: $0, bound: true) } }
    }

    /// The same in the form releases before wrote: bound to the document
    /// only. Nothing in Rewind writes it any more; tests build databases of
    /// those releases with it, and a benchmark measures what binding costs.
    @_spi(Unbound) public func sealEntryUnbound(ops: String, inverse: String) -> String {
        entryPlain(ops: ops, inverse: inverse).withUnsafeBytes { p in unboundEntryAAD.withUnsafeBytes { seal(p, aad: $0, bound: false) } }
    }

    private func entryPlain(ops: String, inverse: String) -> [UInt8] {
        var plain: [UInt8] = []
        plain.reserveCapacity(ops.utf8.count + 1 + inverse.utf8.count)
        plain += ops.utf8
        plain.append(0x0A)
        plain += inverse.utf8
        return plain
    }

    /// A bound entry's authenticated data (see the type's comment), built on
    /// the stack: it changes with every entry, and it is made for every open.
    /// Plain copies into one buffer: written byte by byte, through a nested
    /// function that updated a captured offset, it cost ~2,700 instructions a
    /// call (callgrind; most of them exclusivity checks on that offset).
    private func withPlace<R>(seq: Int64, id: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        // Read in place (no copy of the string to make it mutable): ids are native strings.
        id.utf8.withContiguousStorageIfAvailable { withPlace(seq: seq, idBytes: $0, body) }
            ?? Array(id.utf8).withUnsafeBufferPointer { withPlace(seq: seq, idBytes: $0, body) }
    }

    private func withPlace<R>(seq: Int64, idBytes: UnsafeBufferPointer<UInt8>, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        JSONWriter.withDecimal(seq) { digits in
            placePrefix.withUnsafeBytes { prefix in
                let count = prefix.count + 8 + digits.count + 8 + idBytes.count
                return withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buf in
                    let p = buf.baseAddress!
                    p.copyMemory(from: prefix.baseAddress!, byteCount: prefix.count)
                    var at = prefix.count
                    p.storeBytes(of: UInt64(digits.count).bigEndian, toByteOffset: at, as: UInt64.self)
                    (p + at + 8).copyMemory(from: digits.baseAddress!, byteCount: digits.count)
                    at += 8 + digits.count
                    p.storeBytes(of: UInt64(idBytes.count).bigEndian, toByteOffset: at, as: UInt64.self)
                    if let b = idBytes.baseAddress { (p + at + 8).copyMemory(from: b, byteCount: idBytes.count) }
                    return body(UnsafeRawBufferPointer(buf))
                }
            }
        }
    }

    /// An event's stored `ops` and `inverse` columns for plain ones, sealed
    /// and bound to the entry's place (sealed ones stay as they are).
    public func sealed(ops: String, inverse: String, seq: Int64, id: String) -> (ops: String, inverse: String) {
        DocumentCipher.isSealed(ops) ? (ops, inverse) : (sealEntry(ops: ops, inverse: inverse, seq: seq, id: id), Self.inverseInOps)
    }

    /// An event's stored `ops` and `inverse` columns bound to its place:
    /// plain ones sealed, unbound ones opened and sealed again bound (what
    /// `rewind admin migrate` writes), bound ones as they are.
    public func bound(ops: String, inverse: String, seq: Int64, id: String) throws(RewindError) -> (ops: String, inverse: String) {
        var text = ops
        guard text.withUTF8({ form($0)?.0 }) != .bound else { return (ops, inverse) }
        let plain = try DocumentCipher.plain(ops: ops, inverse: inverse, cipher: self, doc: doc, seq: seq, id: id)
        return (sealEntry(ops: plain.ops, inverse: plain.inverse, seq: seq, id: id), Self.inverseInOps)
    }

    /// The plain ops and inverse of an event's stored columns: opened with
    /// `cipher` when sealed (at the entry's place: `seq`, `id`); plain text
    /// (from before encryption) as it is.
    public static func plain(ops: String, inverse: String, cipher: DocumentCipher?, doc: String, seq: Int64,
                             id: String) throws(RewindError) -> (ops: String, inverse: String) {
        guard isSealed(ops) else { return (ops, inverse) }
        guard let cipher else { throw contentWithoutKey(doc) }
        guard inverse == inverseInOps else { throw RewindError(.internal, "an event of \(doc) has sealed ops and an inverse column that is not \"~\"") }
        return try cipher.openEntry(ops, seq: seq, id: id)
    }

    /// Content met without its key: purged, or read without the master key.
    public static func contentWithoutKey(_ doc: String) -> RewindError {
        RewindError(.forbidden, "the content of \(doc) is encrypted and its key was not given (a purged document, or no --master-key-file)")
    }

    /// The opened bytes of an event sealed with `sealEntry` at entry `seq`
    /// (whose id is `id`), and where its inverse starts (after the newline):
    /// for a reader that parses both without making text of them first. An
    /// entry sealed unbound (before) opens anywhere in its document.
    public func openEntryBytes(_ stored: String, seq: Int64, id: String) throws(RewindError) -> (bytes: [UInt8], newline: Int) {
        var stored = stored
        let opened = stored.withUTF8 { u -> [UInt8]? in
            switch form(u) {
            case let (.bound, start)?: return withPlace(seq: seq, id: id) { open(u, from: start, aad: $0) }
            case let (.unbound, start)?: return unboundEntryAAD.withUnsafeBytes { open(u, from: start, aad: $0) }
            case nil: return nil
            }
        }
        guard let plain = opened else { throw whyNot(stored, .entry, place: (seq, id)) }
        guard let nl = plain.firstIndex(of: UInt8(ascii: "\n")) else {
            throw RewindError(.internal, "sealed entry \(seq) of \(doc) holds no inverse")
        }
        return (plain, nl)
    }

    /// The ops and inverse JSON text of an event sealed with `sealEntry` at entry `seq` (id `id`).
    public func openEntry(_ stored: String, seq: Int64, id: String) throws(RewindError) -> (ops: String, inverse: String) {
        let (plain, nl) = try openEntryBytes(stored, seq: seq, id: id)
        return (String(decoding: plain[..<nl], as: UTF8.self), String(decoding: plain[(nl + 1)...], as: UTF8.self))
    }

    /// The two stored forms (see the type's comment).
    private enum Form { case unbound, bound }

    /// The form of `~<key id>[.2]:<base64>` sealed with this document's key
    /// id, and where its base64 starts; nil: not sealed text of this key.
    /// Read against the key id itself, not by looking for a `.`: no key id
    /// can make one form look like the other.
    private func form(_ u: UnsafeBufferPointer<UInt8>) -> (Form, Int)? {
        let n = keyID.utf8.count
        guard u.count > n + 1, u[0] == UInt8(ascii: "~"), u[1...n].elementsEqual(keyID.utf8) else { return nil }
        if u[n + 1] == UInt8(ascii: ":") { return (.unbound, n + 2) }
        let end = n + 1 + Self.boundMark.count
        guard u.count > end, u[(n + 1)..<end].elementsEqual(Self.boundMark), u[end] == UInt8(ascii: ":") else { return nil }
        return (.bound, end + 1)
    }

    /// The plain bytes of the base64 in `u` from `start`, opened with `aad`; nil when they do not open.
    private func open(_ u: UnsafeBufferPointer<UInt8>, from start: Int, aad: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let bytes = Base64.decode(UnsafeBufferPointer(rebasing: u[start...])) else { return nil }
        return AESGCM.open(bytes, key: key, aad: aad)
    }

    /// A snapshot's sealed bytes opened (the unbound form only).
    private func openSnapshotPlain(_ stored: String) throws(RewindError) -> [UInt8] {
        var stored = stored
        let opened = stored.withUTF8 { u -> [UInt8]? in
            guard case let (.unbound, start)? = form(u) else { return nil }
            return snapshotAAD.withUnsafeBytes { open(u, from: start, aad: $0) }
        }
        guard let opened else { throw whyNot(stored, .snapshot, place: nil) }
        return opened
    }

    /// Why sealed text did not open (the slow path, for the message).
    private func whyNot(_ stored: String, _ field: Field, place: (seq: Int64, id: String)?) -> RewindError {
        let what = place.map { "entry \($0.seq) of \(doc)" } ?? "\(field.rawValue) of \(doc)"
        var stored = stored
        let found = stored.withUTF8 { u in form(u)?.0 }
        let u = Array(stored.utf8)
        guard u.first == UInt8(ascii: "~"), let colon = u.firstIndex(of: UInt8(ascii: ":")) else {
            return RewindError(.internal, "\(what) is not sealed text")
        }
        guard let found else {
            return RewindError(.internal, "\(what) is sealed with key \(String(decoding: u[1..<colon], as: UTF8.self)), not the document's key \(keyID)")
        }
        guard let place, found == .bound else {
            return RewindError(.internal, "\(what) does not open with its key: it was changed, or sealed for another document or field")
        }
        return RewindError(.internal, "the sealed ops and inverse of entry \(place.seq) (id \(place.id)) of \(doc) do not open at their place: "
                               + "they were changed, or moved there from another entry or document")
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
}
