import XCTest
@testable import RewindCore

/// A scrub step reads a snapshot's document without a JSON tree
/// (`Document.readState`, `DocumentLedger.snapshotDocument(text:maxDepth:)`):
/// it must give exactly the document the tree gives, and leave every other
/// form to the tree, which reads it or names what is wrong.
final class StateReaderTests: XCTestCase {
    private static func odd(_ n: Int) -> [Op] {
        var spec = NodeSpec(id: Key("q\"\\\(n)中"), kind: "te\nxt", frame: [.int(0), .double(1.5), .int(-3), .double(1e20)])
        spec.text = Array("a\"b\\c\n\u{1}中😀\u{7f}\u{10ffff}".unicodeScalars)
        spec.props = ["a\"b": ["x": [1, 2, .null, "é"]], "n": .int(Int64.min), "z": .null, "": .bool(true)]
        return [.set("root", key: "clips", value: .bool(n % 2 == 0)), .set("root", key: "focusable", value: .bool(n % 3 == 0)),
                .set("root", key: "undoScope", value: .bool(n % 5 == 0)), .create(spec, parent: "root", index: 0)]
    }

    private static func read(_ bytes: [UInt8], maxDepth: Int = 256) -> Document? {
        bytes.withUnsafeBufferPointer { p in
            var r = JSONParser(reading: p, maxDepth: maxDepth)
            guard let d = try? Document.readState(&r, depth: 0, maxDepth: maxDepth), r.isAtEnd else { return nil }
            return d
        }
    }

    func testStateReadWithoutATreeIsTheStateReadThroughOne() throws {
        var gen = OpGenerator(seed: 2611)
        for n in 0..<80 {
            var doc = gen.document(ops: n * 4)
            for op in Self.odd(n) { XCTAssertNoThrow(try doc.apply(op, limits: Limits())) }
            var w = JSONWriter()
            doc.writeState(to: &w)
            let tree = try Document(json: JSONParser.parse(w.bytes, maxDepth: 256))
            XCTAssertEqual(tree, doc, "document \(n) round trips through the tree")
            let read = try XCTUnwrap(Self.read(w.bytes), "document \(n) read without a tree")
            XCTAssertEqual(read, tree, "document \(n)")
            XCTAssertEqual(read.textScalars, tree.textScalars)
            XCTAssertEqual(read.propBytes, tree.propBytes)
        }
    }

    func testOtherFormsAreLeftToTheTree() {
        let node = #"{"parent":null,"children":[],"kind":"root","frame":[0,0,0,0],"clips":false,"focusable":false,"undoScope":false,"props":{},"text":""}"#
        XCTAssertNotNil(Self.read(Array(#"{"nodes":{"root":\#(node)}}"#.utf8)), "the canonical form")
        for text in [#"{"nodes":{"root":\#(node),"root":\#(node)}}"#,  // an id twice: the tree refuses it
                     #"{"nodes":{"a":\#(node)}}"#,  // no root: the tree refuses it
                     #"{ "nodes":{"root":\#(node)}}"#,
                     #"{"nodes":{"root":\#(node.replacingOccurrences(of: #""props":{}"#, with: #""props":{"k":1,"k":2}"#))}}"#,
                     #"{"nodes":{"root":\#(node.replacingOccurrences(of: #""children":[]"#, with: #""children":[1]"#))}}"#,
                     #"{"nodes":{"root":\#(node.replacingOccurrences(of: #""frame":[0,0,0,0]"#, with: #""frame":{}"#))}}"#,
                     #"{"nodes":{"root":\#(node.replacingOccurrences(of: #""text":"""#, with: #""text":"\u0000""#))}}"#] {
            XCTAssertNil(Self.read(Array(text.utf8)), text)
        }
    }

    /// The snapshot a server stores, read for a scrub: the same version and
    /// document as through the tree, for ledgers with undo history; and the
    /// same results for texts in other forms and at every depth bound.
    func testASnapshotsDocumentIsReadAsTheTreeReadsIt() throws {
        for seed in 700..<730 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var sim = UndoSim()
            for n in 0..<60 {
                let user = Int64.random(in: 1...3, using: &gen.rng)
                if n % 7 == 6 { _ = try? sim.undo(user, policy: .force) } else { _ = try? sim.edit(user, [gen.op(on: sim.doc)], after: 300, group: nil) }
            }
            for op in Self.odd(Int(seed)) { _ = try? sim.edit(1, [op], after: 300, group: nil) }
            let text = Array(JSONWriter.string(sim.ledger.snapshotJSON).utf8)
            let tree = try DocumentLedger.snapshotDocument(JSONParser.parse(text, maxDepth: 256))
            let read = try text.withUnsafeBufferPointer { p throws(RewindError) in try DocumentLedger.snapshotDocument(text: p, maxDepth: 256) }
            XCTAssertEqual(read.version, tree.version, "seed \(seed)")
            XCTAssertEqual(read.document, tree.document, "seed \(seed)")
            XCTAssertEqual(read.document, sim.doc, "seed \(seed)")
            // Keys in another order, or spaces: parsed whole, the same.
            let reordered = Array(JSONWriter.string(.obj([("document", sim.ledger.document.json), ("version", .int(sim.ledger.version))])).utf8)
            let other = try reordered.withUnsafeBufferPointer { p throws(RewindError) in try DocumentLedger.snapshotDocument(text: p, maxDepth: 256) }
            XCTAssertEqual(other.document, tree.document)
            XCTAssertEqual(other.version, tree.version)
            // At every depth bound: the right document or none (the history,
            // which the reader does not look at, may be deeper than the document).
            if seed == 700 {
                var read = 0
                for bound in 1...12 {
                    let viaReader = try? text.withUnsafeBufferPointer { p throws(RewindError) in try DocumentLedger.snapshotDocument(text: p, maxDepth: bound) }
                    if let viaReader { XCTAssertEqual(viaReader.document, tree.document, "depth bound \(bound)"); read += 1 }
                    if bound < 7 { XCTAssertNil(viaReader, "the odd node's props reach depth 7: bound \(bound)") }
                }
                XCTAssertGreaterThan(read, 0)
            }
        }
        // The reader stops after the document: what follows (the history, most of the text) is not read.
        let root = #"{"parent":null,"children":[],"kind":"root","frame":[0,0,0,0],"clips":false,"focusable":false,"undoScope":false,"props":{},"text":"x"}"#
        let prefix = Array(#"{"version":3,"seq":4,"hash":"00","document":{"nodes":{"root":\#(root)}},"history":{"#.utf8)
        let s = try prefix.withUnsafeBufferPointer { p throws(RewindError) in try DocumentLedger.snapshotDocument(text: p, maxDepth: 256) }
        XCTAssertEqual(s.version, 3)
        XCTAssertEqual(s.document[Document.rootID]?.textString, "x")
        // Damage the reader gives up at is still refused by the tree.
        var broken = Array(#"{"version":3,"seq":3,"hash":"00","document":{"nodes":{}},"history":{"#.utf8)
        XCTAssertThrowsError(try broken.withUnsafeBufferPointer { p throws(RewindError) in try DocumentLedger.snapshotDocument(text: p, maxDepth: 256) })
        broken = Array(#"{"version":3,"seq":3,"hash":"00","document":{"nodes":{"root":{"parent":null}}},"history":{}}"#.utf8)
        XCTAssertThrowsError(try broken.withUnsafeBufferPointer { p throws(RewindError) in try DocumentLedger.snapshotDocument(text: p, maxDepth: 256) })
    }
}
