import Crypto
import Dispatch
import Foundation
import Synchronization
import XCTest
@testable @_spi(Unbound) import RewindCore

/// Content sealed with a document's key (SPEC section 15): what is stored
/// opens to what was sealed and to nothing else, and a ledger that seals
/// replays, from what a reader opens, to exactly its live state.
final class DocumentCipherTests: XCTestCase {
    let key = (0..<32).map { UInt8($0 * 7 % 256) }

    /// The table-driven decoder agrees with the encoder on every length, and refuses what is not canonical.
    func testBase64RoundTripsAndRefusesNonCanonicalText() {
        var rng = SeededRandom(seed: 3)
        for n in 0..<200 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            XCTAssertEqual(Base64.decode(Base64.encode(bytes)), bytes, "length \(n)")
        }
        XCTAssertEqual(Base64.encode(Array("th".utf8)), "dGg=")
        // The encoder writes what Foundation writes, on every length (full groups go through a table, the tail not).
        for n in 0..<200 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            XCTAssertEqual(Base64.encode(bytes), Data(bytes).base64EncodedString(), "length \(n)")
        }
        let every = (0..<768).map { UInt8(truncatingIfNeeded: $0) }  // each byte value in each place of a group
        XCTAssertEqual(Base64.encode(every), Data(every).base64EncodedString())
        XCTAssertEqual(Base64.decode("dGg="), Array("th".utf8))
        for bad in ["dGh=", "dG=g", "d===", "dGg", "dG g", "=Ggg", "dGg=dGg="] { XCTAssertNil(Base64.decode(bad), bad) }
        // Anywhere in a long text (the quads before the last go a faster way), any byte outside the alphabet is refused.
        let long = Base64.encode((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        for at in [0, 1, 2, 3, 4, 5, 6, 7, 150, 203, long.utf8.count - 5] {
            for bad: UInt8 in [0x20, UInt8(ascii: "="), UInt8(ascii: "-"), 0x80, 0xFF, 0] {
                var b = Array(long.utf8)
                b[at] = bad
                XCTAssertNil(b.withUnsafeBufferPointer { Base64.decode($0) }, "byte \(bad) at \(at)")
            }
        }
    }

    func testSealedTextOpensToWhatWasSealedAndShowsNoneOfIt() throws {
        let c = DocumentCipher(doc: "d", keyID: "k1", key: key)
        var gen = OpGenerator(seed: 7)
        for _ in 0..<500 {
            let plain = "[" + String(String.UnicodeScalarView(gen.text(40))) + "]"
            let sealed = c.seal(plain, .snapshot)
            XCTAssertTrue(sealed.hasPrefix("~k1:"), sealed)
            XCTAssertTrue(DocumentCipher.isSealed(sealed))
            XCTAssertFalse(DocumentCipher.isSealed(plain))
            XCTAssertEqual(try c.open(sealed, .snapshot), plain)
            let entry = c.sealEntry(ops: plain, inverse: "[\"inv\"]", seq: 5, id: "e5")
            XCTAssertTrue(entry.hasPrefix("~k1.2:"), entry)
            XCTAssertTrue(DocumentCipher.isBound(entry))
            XCTAssertFalse(DocumentCipher.isBound(sealed))
            XCTAssertEqual(try c.openEntry(entry, seq: 5, id: "e5").ops, plain)
            XCTAssertEqual(try c.openEntry(entry, seq: 5, id: "e5").inverse, "[\"inv\"]")
            if plain.count > 6 { XCTAssertFalse(sealed.contains(plain.dropFirst().dropLast())) }
        }
        XCTAssertNotEqual(c.seal("[1]", .snapshot), c.seal("[1]", .snapshot), "a fresh nonce each time")
    }

    func testSealedTextOpensOnlyForItsDocumentFieldAndKey() throws {
        let c = DocumentCipher(doc: "d", keyID: "k1", key: key)
        let sealed = c.sealEntry(ops: "[{\"op\":\"set\"}]", inverse: "[]", seq: 3, id: "e3")
        XCTAssertThrowsError(try c.openSnapshotBytes(sealed), "another column")
        XCTAssertThrowsError(try DocumentCipher(doc: "e", keyID: "k1", key: key).openEntry(sealed, seq: 3, id: "e3"), "another document")
        XCTAssertThrowsError(try DocumentCipher(doc: "d", keyID: "k1", key: Array(key.reversed())).openEntry(sealed, seq: 3, id: "e3"), "another key")
        XCTAssertThrowsError(try DocumentCipher(doc: "d", keyID: "k2", key: key).openEntry(sealed, seq: 3, id: "e3"), "another key id")
        var bytes = Array(sealed.utf8)
        let i = bytes.count - 10
        bytes[i] = bytes[i] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        XCTAssertThrowsError(try c.openEntry(String(decoding: bytes, as: UTF8.self), seq: 3, id: "e3"), "a changed byte")
        XCTAssertThrowsError(try c.openEntry("[1]", seq: 3, id: "e3"), "plain text is not sealed text")
        XCTAssertThrowsError(try DocumentCipher.plain(ops: sealed, inverse: "~", cipher: nil, doc: "d", seq: 3, id: "e3"), "no key")
        XCTAssertEqual(try DocumentCipher.plain(ops: "[1]", inverse: "[2]", cipher: nil, doc: "d", seq: 3, id: "e3").inverse, "[2]",
                       "plain text as it is")
    }

    /// An entry's sealed text is bound to its place: it opens at its own
    /// position and id only, so a superuser who moves it to another entry of
    /// the same document (and re-seals the unkeyed chain) is caught by
    /// whoever opens it there. Entries sealed before (bound to the document
    /// only) still open anywhere in it, and neither form passes for the other.
    func testAnEntryOpensOnlyAtItsPlaceAndOldUnboundEntriesStillOpen() throws {
        let c = DocumentCipher(doc: "d", keyID: "k1", key: key)
        let sealed = c.sealEntry(ops: "[1]", inverse: "[2]", seq: 3, id: "e3")
        XCTAssertEqual(try c.openEntry(sealed, seq: 3, id: "e3").inverse, "[2]")
        XCTAssertThrowsError(try c.openEntry(sealed, seq: 4, id: "e3"), "another position") {
            XCTAssertTrue("\($0)".contains("the sealed ops and inverse of entry 4 (id e3) of d do not open at their place"), "\($0)")
        }
        XCTAssertThrowsError(try c.openEntry(sealed, seq: 3, id: "e4"), "another entry id")
        // Fields that could run into one another if they were only joined.
        let tricky = DocumentCipher(doc: "d1", keyID: "k1", key: key)
        let t = tricky.sealEntry(ops: "[1]", inverse: "[]", seq: 23, id: "e")
        XCTAssertThrowsError(try tricky.openEntry(t, seq: 2, id: "3e"))
        XCTAssertThrowsError(try DocumentCipher(doc: "d12", keyID: "k1", key: key).openEntry(t, seq: 3, id: "e"))

        let old = c.sealEntryUnbound(ops: "[1]", inverse: "[2]")
        XCTAssertTrue(old.hasPrefix("~k1:"), old)
        XCTAssertFalse(DocumentCipher.isBound(old))
        XCTAssertEqual(try c.openEntry(old, seq: 3, id: "e3").ops, "[1]", "an entry sealed before opens")
        XCTAssertEqual(try c.openEntry(old, seq: 9, id: "e9").ops, "[1]", "anywhere in its document: what migrate binds")
        XCTAssertThrowsError(try DocumentCipher(doc: "e", keyID: "k1", key: key).openEntry(old, seq: 3, id: "e3"), "not in another")
        // The form is in the stored text (and the chain): stripping the mark
        // from a bound entry does not make it open anywhere, nor adding it to an old one.
        let stripped = "~k1:" + sealed.dropFirst("~k1.2:".count)
        XCTAssertThrowsError(try c.openEntry(stripped, seq: 3, id: "e3"))
        let marked = "~k1.2:" + old.dropFirst("~k1:".count)
        XCTAssertThrowsError(try c.openEntry(marked, seq: 3, id: "e3"))

        // What migrate writes: plain and unbound entries bound where they are, bound ones as they are.
        let fromOld = try c.bound(ops: old, inverse: "~", seq: 7, id: "e7")
        XCTAssertTrue(DocumentCipher.isBound(fromOld.ops))
        XCTAssertEqual(fromOld.inverse, "~")
        XCTAssertEqual(try c.openEntry(fromOld.ops, seq: 7, id: "e7").inverse, "[2]")
        XCTAssertThrowsError(try c.openEntry(fromOld.ops, seq: 3, id: "e3"))
        let fromPlain = try c.bound(ops: "[5]", inverse: "[6]", seq: 8, id: "e8")
        XCTAssertEqual(try c.openEntry(fromPlain.ops, seq: 8, id: "e8").inverse, "[6]")
        XCTAssertEqual(try c.bound(ops: sealed, inverse: "~", seq: 3, id: "e3").ops, sealed)
        XCTAssertThrowsError(try DocumentCipher(doc: "d", keyID: "k2", key: key).bound(ops: old, inverse: "~", seq: 7, id: "e7"))
    }

    /// A key's libcrypto contexts are keyed once and reused, given a new
    /// nonce per message: what they seal must still be standard AES-GCM
    /// (opened here by swift-crypto, a second implementation), after failed
    /// opens on the same contexts too, and with threads using one key at once.
    func testReusedContextsSealStandardAESGCMAfterFailuresAndAcrossThreads() throws {
        let c = DocumentCipher(doc: "d", keyID: "k1", key: key)
        let key = self.key
        @Sendable func openElsewhere(_ sealed: String, aad: String) throws -> String {
            try openElsewhere(sealed, aad: Array(aad.utf8))
        }
        @Sendable func openElsewhere(_ sealed: String, aad: [UInt8]) throws -> String {
            let reference = SymmetricKey(data: key)
            let combined = try XCTUnwrap(Base64.decode(String(sealed.split(separator: ":", maxSplits: 1)[1])))
            let box = try AES.GCM.SealedBox(combined: combined)
            return String(decoding: try AES.GCM.open(box, using: reference, authenticating: aad), as: UTF8.self)
        }
        /// A bound entry's authenticated data as docs/architecture.md states it, built here independently.
        @Sendable func place(_ doc: String, _ seq: Int64, _ id: String) -> [UInt8] {
            ["rewind entry at", doc, String(seq), id].flatMap { f -> [UInt8] in
                let n = UInt64(f.utf8.count)
                return (0..<8).map { UInt8(truncatingIfNeeded: n >> (56 - 8 * $0)) } + Array(f.utf8)
            }
        }
        var gen = OpGenerator(seed: 11)
        for i in 0..<300 {
            let plain = "[" + String(String.UnicodeScalarView(gen.text(i % 90))) + "]"
            let entry = c.sealEntry(ops: plain, inverse: "[]", seq: Int64(i), id: "e\(i)")
            XCTAssertEqual(try openElsewhere(entry, aad: place("d", Int64(i), "e\(i)")), plain + "\n[]")
            XCTAssertEqual(try openElsewhere(c.sealEntryUnbound(ops: plain, inverse: "[]"), aad: "rewind entry of d"), plain + "\n[]")
            if i % 3 == 0 {  // failures on the same contexts, then a good open
                var bytes = Array(entry.utf8)
                bytes[bytes.count - 3] = bytes[bytes.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                XCTAssertThrowsError(try c.openEntry(String(decoding: bytes, as: UTF8.self), seq: Int64(i), id: "e\(i)"))
                XCTAssertThrowsError(try c.openSnapshotBytes(entry))
                XCTAssertThrowsError(try c.openEntry(entry, seq: Int64(i) + 1, id: "e\(i)"))
            }
            XCTAssertEqual(try c.openEntry(entry, seq: Int64(i), id: "e\(i)").ops, plain)
            let snapshot = c.seal(plain, .snapshot)
            XCTAssertEqual(try openElsewhere(snapshot, aad: "rewind snapshot of d"), plain)
        }
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<400 {
                let plain = "[\(t),\(i)]"
                let sealed = c.sealEntry(ops: plain, inverse: "[]", seq: Int64(i), id: "t\(t)")
                if (try? c.openEntry(sealed, seq: Int64(i), id: "t\(t)").ops) != plain
                    || (try? openElsewhere(sealed, aad: place("d", Int64(i), "t\(t)"))) != plain + "\n[]" {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, 0)
    }

    /// Keyed fingerprints: equal for equal content under one key, different
    /// under another, and not the unkeyed FNV the log held before.
    /// Snapshots are compressed before they are sealed: they open to the
    /// same text, and snapshots sealed as plain text (before compression, or
    /// text that would not shrink) still open.
    func testSnapshotsAreCompressedAndOpenToTheirTextAsOldOnesStillDo() throws {
        let c = DocumentCipher(doc: "d", keyID: "k1", key: key)
        var rng = SeededRandom(seed: 4242)
        var texts = [#"{"version":1}"#, "{" + String(repeating: #""node":"a","text":"bcd","#, count: 5_000) + "}"]
        for n in [1, 7, 100, 4_096, 70_000] {
            // Random letters (little to gain) and repeated words (much), non-ASCII included.
            texts.append(String((0..<n).map { _ in Character(Unicode.Scalar(UInt8.random(in: 33...126, using: &rng))) }))
            texts.append((0..<n / 5 + 1).map { _ in ["héllo", "中文", "😀", "\"q\""].randomElement(using: &rng)! }.joined())
        }
        for text in texts {
            let sealed = c.sealSnapshot(text)
            XCTAssertTrue(DocumentCipher.isSealed(sealed))
            XCTAssertEqual(try c.openSnapshotBytes(sealed), Array(text.utf8), "\(text.prefix(40))…")
            XCTAssertEqual(try c.openSnapshotBytes(c.seal(text, .snapshot)), Array(text.utf8), "sealed plain, as before")
            XCTAssertThrowsError(try DocumentCipher(doc: "e", keyID: "k1", key: key).openSnapshotBytes(sealed), "another document")
        }
        let big = texts[1]
        XCTAssertLessThan(c.sealSnapshot(big).utf8.count * 5, c.seal(big, .snapshot).utf8.count, "repetitive JSON shrinks")
        // The block is refused unless it holds exactly the length stated.
        let bytes = Array(big.utf8)
        let block = try XCTUnwrap(bytes.withUnsafeBytes { LZ4.compress($0) })
        XCTAssertEqual(block.withUnsafeBytes { LZ4.decompress($0, count: bytes.count) }, bytes)
        for wrong in [bytes.count - 1, bytes.count + 1, 1, 0] { XCTAssertNil(block.withUnsafeBytes { LZ4.decompress($0, count: wrong) }, "\(wrong)") }
        XCTAssertNil(Array(block.dropLast()).withUnsafeBytes { LZ4.decompress($0, count: bytes.count) }, "cut short")
    }

    func testFingerprintsAreKeyed() {
        let a = DocumentCipher(doc: "d", keyID: "k1", key: key), b = DocumentCipher(doc: "d", keyID: "k2", key: Array(key.reversed()))
        let content = Array("{\"ops\":[]}".utf8)
        XCTAssertEqual(a.fingerprint(content), a.fingerprint(content))
        XCTAssertNotEqual(a.fingerprint(content), b.fingerprint(content))
        XCTAssertNotEqual(a.fingerprint(content), Fingerprint.hex(content))
        XCTAssertEqual(a.fingerprint(content).count, 16)
        // What the log stores (`tx_digest`, in the chain) stays what it was:
        // the first 8 bytes of SHA-256 over the fingerprint key (an HMAC of
        // "rewind fingerprint" under the data key), then the content; a retry
        // read against an old row must find the same text.
        let fingerprintKey = Array(HMAC<Crypto.SHA256>.authenticationCode(for: Array("rewind fingerprint".utf8), using: SymmetricKey(data: key)))
        for n in [0, 1, 31, 32, 55, 56, 64, 100, 1_000] {
            let content = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let digest = Array(Crypto.SHA256.hash(data: fingerprintKey + content))
            XCTAssertEqual(a.fingerprint(content), digest.prefix(8).map { String(format: "%02x", $0) }.joined(), "length \(n)")
        }
    }

    /// Property: a ledger that seals what it appends (random histories with
    /// stale bases) stores no plain ops, and a reader that opens the stored
    /// text — checking the chain over it — replays to exactly the live state.
    func testReplayOfSealedEntriesEqualsTheLiveState() throws {
        for seed in 0..<40 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            let cipher = DocumentCipher(doc: "d", keyID: "k\(seed)", key: (0..<32).map { _ in UInt8.random(in: 0...255, using: &gen.rng) })
            var live = DocumentLedger(doc: "d")
            live.cipher = cipher
            var stored: [Event] = []
            var states: [Document] = [live.document]
            for i in 0..<40 {
                let base = max(0, live.version - Int64.random(in: 0...3, using: &gen.rng))
                let op = gen.op(on: states[Int(base)])
                let s = DocumentLedger.Submission(tx: "t\(i)", base: base, ops: [op], action: nil, userID: Int64(i % 3), userName: "u",
                                                  client: "c", eventID: "e\(i)", time: 1_000)
                guard case let .appended(e)? = try? live.append(s) else { continue }
                XCTAssertTrue(DocumentCipher.isSealed(e.stored.ops), "seed \(seed)")
                XCTAssertEqual(e.stored.inverse, DocumentCipher.inverseInOps)
                XCTAssertEqual(e.stored.plainOps, JSONWriter.string(Op.encodeList(e.ops)), "the wire still gets plain ops")
                stored.append(e)
                states.append(live.document)
            }
            // As the store reads them back: the stored text, opened and parsed.
            var replayed = DocumentLedger(doc: "d")
            for e in stored {
                var read = e
                XCTAssertTrue(DocumentCipher.isBound(e.stored.ops))
                let opened = try DocumentCipher.plain(ops: e.stored.ops, inverse: e.stored.inverse, cipher: cipher, doc: "d", seq: e.seq, id: e.id)
                read.ops = try Op.parseList(try JSONParser.parse(opened.ops, maxDepth: 64), limits: .unbounded)
                read.inverse = try Op.parseList(try JSONParser.parse(opened.inverse, maxDepth: 64), limits: .unbounded)
                XCTAssertEqual(read.ops, e.ops)
                try replayed.replay(read)
                XCTAssertEqual(replayed.document, states[Int(e.version)], "seed \(seed) v\(e.version)")
            }
            XCTAssertEqual(replayed.document.json, live.document.json)
            XCTAssertEqual(replayed.headHash, live.headHash, "the chain over the sealed text checks out")
        }
    }
}
