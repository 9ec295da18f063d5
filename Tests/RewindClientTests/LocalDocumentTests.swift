import RewindCore
import RewindTestSupport
import XCTest

@testable import RewindClient

/// The client's copy against the server's own core (`DocumentLedger`, the code
/// that rebases and applies every submit): whatever the interleaving of typing,
/// sending, committing and delivering, once everything is delivered every
/// terminal shows exactly the server's document.
final class LocalDocumentTests: XCTestCase {
    /// One terminal: its copy, what it sent and the server has not read, what the server sent it.
    struct Terminal {
        var local = LocalDocument()
        var toServer: [LocalDocument.InFlight] = []
        var fromServer: [Event] = []
        var sent = 0
    }

    func testEveryTerminalEndsWithTheServersDocumentWhateverTheInterleaving() throws {
        for seed in 1...300 as ClosedRange<UInt64> {
            try runOneHistory(seed: seed)
        }
    }

    private func runOneHistory(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        var server = DocumentLedger(doc: "d")
        let text: Key = "t"
        let create = Op.create(NodeSpec(id: text, kind: "text", frame: [0, 0, 10, 10]), parent: "root", index: 0)
        guard case let .appended(first) = try server.append(.init(tx: "setup", base: 0, ops: [create], action: nil, userID: 9,
                                                                   userName: "setup", client: "s", eventID: "e0", time: 0)) else { return XCTFail() }
        let names = ["alice", "bob", "carol"]
        var terms = names.map { _ in Terminal() }
        for i in terms.indices { terms[i].fromServer = [first] }
        let alphabet: [Unicode.Scalar] = ["a", "b", "c", "中", "😀", " "]
        var eventCount = 1
        for _ in 0..<120 {
            let who = Int.random(in: 0..<terms.count, using: &rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0, 1:   // type or delete somewhere in what this terminal shows
                guard let n = terms[who].local.view[text] else { continue }
                let count = n.text.count
                let op: Op = count > 0 && Bool.random(using: &rng)
                    ? .remove(text, pos: Int.random(in: 0..<count, using: &rng), len: 1 + Int.random(in: 0..<min(3, count), using: &rng))
                    : .insert(text, pos: Int.random(in: 0...count, using: &rng),
                              text: (0..<Int.random(in: 1...3, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
                if case let .remove(_, p, l) = op, p + l > count { continue }
                try terms[who].local.edit([op], newSegment: Bool.random(using: &rng))
            case 2:   // the terminal sends its next submit, if it may
                terms[who].sent += 1
                if let s = terms[who].local.nextSubmit(tx: "\(names[who])-\(terms[who].sent)") { terms[who].toServer.append(s) }
            case 3:   // the server commits the oldest submit of that terminal
                guard !terms[who].toServer.isEmpty else { continue }
                let s = terms[who].toServer.removeFirst()
                eventCount += 1
                guard case let .appended(e) = try server.append(.init(tx: s.tx, base: s.base, ops: s.ops, action: nil, userID: Int64(who),
                                                                      userName: names[who], client: names[who], eventID: "e\(eventCount)",
                                                                      time: Int64(eventCount))) else { continue }
                for i in terms.indices { terms[i].fromServer.append(e) }
            default:   // the terminal reads one event
                if !terms[who].fromServer.isEmpty { deliver(&terms[who], names[who]) }
            }
        }
        // Quiesce: send, commit and deliver until nothing is pending anywhere.
        var rounds = 0
        while terms.contains(where: { !$0.local.isSettled || !$0.toServer.isEmpty || !$0.fromServer.isEmpty }) {
            rounds += 1
            XCTAssertLessThan(rounds, 10_000, "seed \(seed): does not settle")
            if rounds >= 10_000 { return }
            for who in terms.indices {
                while !terms[who].fromServer.isEmpty { deliver(&terms[who], names[who]) }
                terms[who].sent += 1
                if let s = terms[who].local.nextSubmit(tx: "\(names[who])-\(terms[who].sent)") { terms[who].toServer.append(s) }
                while !terms[who].toServer.isEmpty {
                    let s = terms[who].toServer.removeFirst()
                    eventCount += 1
                    if case let .appended(e) = try server.append(.init(tx: s.tx, base: s.base, ops: s.ops, action: nil, userID: Int64(who),
                                                                       userName: names[who], client: names[who], eventID: "e\(eventCount)",
                                                                       time: Int64(eventCount))) {
                        for i in terms.indices { terms[i].fromServer.append(e) }
                    }
                }
            }
        }
        for (i, t) in terms.enumerated() {
            XCTAssertEqual(t.local.version, server.version, "seed \(seed), \(names[i])")
            XCTAssertEqual(t.local.view[text]?.textString, server.document[text]?.textString, "seed \(seed), \(names[i])")
            XCTAssertEqual(t.local.confirmed, server.document, "seed \(seed), \(names[i])")
        }
    }

    private func deliver(_ t: inout Terminal, _ name: String) {
        let e = t.fromServer.removeFirst()
        let r = t.local.apply(version: e.version, ops: e.ops, tx: e.tx, isOwn: e.userName == name)
        XCTAssertNotEqual(r, .gap)
        if case .diverged = r { XCTFail("diverged at v\(e.version)") }
    }

    func testAnInsertExactlyAtTheCaretLeavesTheCaretBeforeIt() throws {
        var d = LocalDocument()
        var doc = Document()
        _ = try doc.apply([.create(NodeSpec(id: "t", kind: "text", frame: [0, 0, 1, 1]), parent: "root", index: 0),
                           .insert("t", pos: 0, text: Array("abcd".unicodeScalars))], limits: Limits())
        d.reset(to: doc, version: 1)
        d.selection = .init(node: "t", start: 2, end: 2)
        _ = d.apply(version: 2, ops: [.insert("t", pos: 2, text: ["X"])], tx: "x", isOwn: false)
        XCTAssertEqual(d.selection, .init(node: "t", start: 2, end: 2))
        _ = d.apply(version: 3, ops: [.insert("t", pos: 0, text: ["Y", "Z"])], tx: "y", isOwn: false)
        XCTAssertEqual(d.selection, .init(node: "t", start: 4, end: 4))
        _ = d.apply(version: 4, ops: [.remove("t", pos: 1, len: 4)], tx: "z", isOwn: false)
        XCTAssertEqual(d.selection, .init(node: "t", start: 1, end: 1))
        XCTAssertEqual(d.view["t"]?.textString, "Ycd")
    }
}
