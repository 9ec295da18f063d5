import Foundation
import XCTest
@testable import RewindCore

/// One list of pushes (`Push.Kind`), and everything that names them agrees
/// with it: docs/protocol.md's contract line and its push table, the web
/// client's `PUSH_HANDLERS`, and each encoder's output. (The Swift client's
/// `handlePush` switches over `Push.Kind` exhaustively: the compiler checks it.)
final class PushRegistryTests: XCTestCase {
    let kinds = Push.Kind.allCases.map(\.rawValue)

    func read(_ path: String) throws -> String {
        try String(contentsOfFile: TestDatabase.repositoryRoot + "/" + path, encoding: .utf8)
    }

    func matches(_ pattern: String, in text: String) throws -> [[String]] {
        let re = try NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        return re.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { m in
            (1..<m.numberOfRanges).map { i in Range(m.range(at: i), in: text).map { String(text[$0]) } ?? "" }
        }
    }

    func testTheProtocolPagesPushTableIsTheRegistry() throws {
        let doc = try read("docs/protocol.md")
        // The contract's line: Server → client, push: {"push": "events" | "presence" | …, …}
        let start = try XCTUnwrap(doc.range(of: "Server → client, push:"))
        let line = String(doc[start.upperBound...].prefix { $0 != "}" })
        XCTAssertEqual(Set(try matches(#""([a-z_]+)""#, in: line).map { $0[0] }.filter { $0 != "push" }), Set(kinds),
                       "the contract's list of pushes")
        // The table under "Pushes (as implemented)".
        let section = try XCTUnwrap(doc.range(of: "## Pushes (as implemented)"))
        let rest = doc[section.upperBound...]
        let body = String(rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)])
        let rows = try matches(#"^\| `([a-z_]+)` \| (.*) \|$"#, in: body)
        XCTAssertEqual(rows.map { $0[0] }, kinds, "one row per push, in the registry's order")
        for row in rows {
            guard let kind = Push.Kind(rawValue: row[0]) else { continue }
            let fields = try matches("`([a-z_]+)`", in: row[1]).map { $0[0] }
            XCTAssertEqual(fields, kind.fields, "the fields of \(row[0])")
        }
    }

    func testTheWebClientHandlesEveryPushAndNoOther() throws {
        let client = try read("web/pushes.js")
        let start = try XCTUnwrap(client.range(of: "PUSH_HANDLERS = {"))
        let rest = client[start.upperBound...]
        let object = String(rest[..<(rest.range(of: "\n};")?.lowerBound ?? rest.endIndex)])
        let handled = try matches(#"^  ([a-z_]+)[(:]"#, in: object).map { $0[0] }
        XCTAssertEqual(Set(handled), Set(kinds), "web/pushes.js PUSH_HANDLERS")
        XCTAssertEqual(handled.count, kinds.count, "each once")
    }

    func testEachEncoderWritesItsRegisteredFieldsInOrder() throws {
        let prompt = try Prompt(id: "p1", title: "Undo Typing?", reason: "shake", actions: [.init(id: "undo", title: "Undo", style: .default)])
        let state = UndoPromptState(tops: (true, "Typing", false, nil), scope: nil, presented: ["p1"])
        let lines: [(Push.Kind, [UInt8])] = [
            (.events, Push.events(doc: "d", [Array(#"{"version":1}"#.utf8)])),
            (.presence, Push.presence(doc: "d", user: "alice", client: "A",
                                      Presence(node: Key("n"), selection: Selection(node: Key("n"), start: 0, end: 1)))),
            (.prompt, Push.prompt(doc: "d", prompt)),
            (.dismiss, Push.dismiss(prompt: "p1")),
            (.closed, Push.closed(doc: "d", reason: "forbidden")),
            (.promptState, Push.promptState(doc: "d", state, locale: "en")),
            (.shortcuts, Push.shortcuts([])),
            (.bye, Push.bye(reason: "idle", retry: true, message: "m")),
            (.tokenExpiring, Push.tokenExpiring(inMs: 59_000)),
            (.renamed, Push.renamed(doc: "d", title: "Plans")),
        ]
        XCTAssertEqual(lines.map(\.0), Push.Kind.allCases, "every kind has an encoder here")
        for (kind, bytes) in lines {
            XCTAssertEqual(bytes.last, 0x0A, "\(kind): one line")
            let o = try XCTUnwrap(try JSONParser.parse(bytes).objectValue, "\(kind)")
            XCTAssertEqual(o.members.map(\.0), ["push"] + kind.fields, "\(kind)")
            XCTAssertEqual(o["push"]?.stringValue, kind.rawValue)
        }
    }
}
