import Foundation
import RewindCore
import RewindTestSupport
import XCTest

@testable import RewindClient

/// The browser client (`web/rewind.js`) must transform exactly as the server
/// and the Swift client do, or a browser's copy would drift from the log.
/// The same random interleavings of three terminals (typing, sending,
/// committing through the server's own `DocumentLedger`, delivering) run
/// through the Swift `LocalDocument` here; every step, with the view each
/// terminal shows after it, is written to a file that `Tests/Web/agreement.mjs`
/// replays through `rewind.js` under node, checking every view. Random pairs of
/// op lists go through both `transform`s too.
final class BrowserClientAgreementTests: XCTestCase {
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    func opsJSON(_ ops: [Op]) -> JSON { Op.encodeList(ops) }

    /// One history: steps (`t` terminal, `a` action, its data, `view` after) for the node side.
    func history(seed: UInt64) throws -> JSON {
        var rng = SeededRandom(seed: seed)
        var server = DocumentLedger(doc: "d")
        let text: Key = "t"
        var spec = NodeSpec(id: text, kind: "text", frame: [0, 0, 10, 10])
        spec.text = Array("héllo".unicodeScalars)
        guard case let .appended(first) = try server.append(.init(tx: "setup", base: 0, ops: [.create(spec, parent: "root", index: 0)],
                                                                   action: nil, userID: 9, userName: "setup", client: "s", eventID: "e0", time: 0))
        else { throw TestFailure("setup") }
        let names = ["alice", "bob", "carol"]
        var locals = names.map { _ in LocalDocument() }
        var toServer: [[LocalDocument.InFlight]] = names.map { _ in [] }
        var fromServer: [[Event]] = names.map { _ in [first] }
        var sent = names.map { _ in 0 }
        var steps: [JSON] = []
        let alphabet: [Unicode.Scalar] = ["a", "b", "中", "😀", " ", "é"]
        var eventCount = 1

        func record(_ who: Int, _ fields: [(String, JSON?)]) {
            steps.append(.obj([("t", .int(Int64(who)))] + fields + [("view", .string(locals[who].view[text]?.textString ?? "<none>")),
                                                                    ("version", .int(locals[who].version))]))
        }
        func deliver(_ who: Int) {
            let e = fromServer[who].removeFirst()
            _ = locals[who].apply(version: e.version, ops: e.ops, tx: e.tx, isOwn: e.userName == names[who])
            record(who, [("a", "deliver"), ("event", .obj([("version", .int(e.version)), ("ops", opsJSON(e.ops)), ("tx", .string(e.tx)),
                                                            ("own", .bool(e.userName == names[who]))]))])
        }
        func commit(_ who: Int) throws {
            let s = toServer[who].removeFirst()
            eventCount += 1
            if case let .appended(e) = try server.append(.init(tx: s.tx, base: s.base, ops: s.ops, action: nil, userID: Int64(who),
                                                               userName: names[who], client: names[who], eventID: "e\(eventCount)",
                                                               time: Int64(eventCount))) {
                for i in names.indices { fromServer[i].append(e) }
            }
        }
        func send(_ who: Int) {
            sent[who] += 1
            let tx = "\(names[who])-\(sent[who])"
            if let s = locals[who].nextSubmit(tx: tx) { toServer[who].append(s) }
            record(who, [("a", "send"), ("tx", .string(tx))])
        }

        for _ in 0..<80 {
            let who = Int.random(in: 0..<names.count, using: &rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0, 1:
                guard let n = locals[who].view[text] else { continue }
                let count = n.text.count
                let op: Op = count > 0 && Bool.random(using: &rng)
                    ? .remove(text, pos: Int.random(in: 0..<count, using: &rng), len: 1 + Int.random(in: 0..<min(3, count), using: &rng))
                    : .insert(text, pos: Int.random(in: 0...count, using: &rng),
                              text: (0..<Int.random(in: 1...3, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
                if case let .remove(_, p, l) = op, p + l > count { continue }
                let segment = Bool.random(using: &rng)
                try locals[who].edit([op], newSegment: segment)
                record(who, [("a", "edit"), ("ops", opsJSON([op])), ("segment", .bool(segment))])
            case 2: send(who)
            case 3: if !toServer[who].isEmpty { try commit(who) }
            default: if !fromServer[who].isEmpty { deliver(who) }
            }
        }
        var rounds = 0
        while locals.indices.contains(where: { !locals[$0].isSettled || !toServer[$0].isEmpty || !fromServer[$0].isEmpty }) {
            rounds += 1
            if rounds > 1_000 { throw TestFailure("seed \(seed) does not settle") }
            for who in names.indices {
                while !fromServer[who].isEmpty { deliver(who) }
                send(who)
                while !toServer[who].isEmpty { try commit(who) }
            }
        }
        return .obj([("seed", .int(Int64(seed))), ("steps", .array(steps)), ("final", .string(server.document[text]?.textString ?? ""))])
    }

    /// Random pairs of text op lists on one text, and what Swift's transform makes of them.
    func transformCases(_ n: Int) -> JSON {
        var rng = SeededRandom(seed: 77)
        var cases: [JSON] = []
        func ops(_ length: Int) -> [Op] {
            var len = length
            return (0..<Int.random(in: 1...3, using: &rng)).compactMap { _ in
                if len > 0 && Bool.random(using: &rng) {
                    let p = Int.random(in: 0..<len, using: &rng), l = 1 + Int.random(in: 0..<min(4, len - p), using: &rng)
                    len -= l
                    return .remove("t", pos: p, len: l)
                }
                let s = (0..<Int.random(in: 1...3, using: &rng)).map { _ in ["x", "y", "ß", "😀"].randomElement(using: &rng)! as Unicode.Scalar }
                defer { len += s.count }
                return .insert("t", pos: Int.random(in: 0...len, using: &rng), text: s)
            }
        }
        for _ in 0..<n {
            let length = Int.random(in: 0...8, using: &rng)
            let a = ops(length), b = ops(length)
            let (a2, b2) = TextTransform.transform(a, b)
            cases.append(.obj([("a", opsJSON(a)), ("b", opsJSON(b)), ("a2", opsJSON(a2)), ("b2", opsJSON(b2))]))
        }
        return .array(cases)
    }

    func testTheBrowserClientTransformsExactlyAsTheSwiftOne() throws {
        let histories = try (1...150 as ClosedRange<UInt64>).map { try history(seed: $0) }
        let input = JSON.obj([("histories", .array(histories)), ("transforms", transformCases(2_000))])
        let path = NSTemporaryDirectory() + "rewind-agreement-\(getpid()).json"
        try JSONWriter.string(input).write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let node = try ChildProcess.run("/usr/bin/env", ["node", Self.root + "/Tests/Web/agreement.mjs", path])
        let printed = node.out + node.err
        XCTAssertEqual(node.status, 0, printed)
        XCTAssertTrue(printed.contains("agree: 150 histories"), printed)
        print(printed.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
