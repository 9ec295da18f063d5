import Foundation
import XCTest
@testable import RewindCore

/// The server API (`--api`; PROTOCOL.md, "The server API"; docs/api/openapi.yaml)
/// against a real server and PostgreSQL: keys and scopes, each endpoint, edits
/// that reach terminals and that their user can undo, and bad requests answered
/// as problem documents.
final class APITests: XCTestCase {
    func apiServer(_ db: TestDatabase, _ extra: [String] = []) throws -> ServerProcess {
        try ServerProcess(database: db, arguments: ["--api", "127.0.0.1:0"] + extra)
    }

    func key(_ db: TestDatabase, _ name: String, _ scopes: String...) throws -> String {
        try admin(db, ["api-key", "create", name] + scopes.flatMap { ["--scope", $0] }).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testKeysAuthenticateAndTheirScopesLimitWhatTheyDo() throws {
        let db = try TestDatabase(users: ["bob"])
        let s = try apiServer(db)
        let port = try XCTUnwrap(s.apiPort)
        let full = try key(db, "backend", "docs:read", "docs:write", "access:write")
        let reader = try key(db, "search", "docs:read")
        XCTAssertTrue(full.hasPrefix("rwk_"))

        let anonymous = try HTTPTestClient(port: port)
        let none = try anonymous.request("GET", "/v1/docs/x")
        XCTAssertEqual(none.status, 401)
        XCTAssertEqual(none.headers["content-type"], "application/problem+json")
        XCTAssertEqual(none.json["type"], "urn:rewind:problem:unauthorized")
        XCTAssertEqual(none.headers["www-authenticate"], "Bearer")
        anonymous.key = "rwk_not-a-key"
        XCTAssertEqual(try anonymous.request("GET", "/v1/docs/x").status, 401)

        let r = try HTTPTestClient(port: port, key: reader)
        let refused = try r.request("POST", "/v1/docs", ["doc": "d", "owner": "bob"])
        XCTAssertEqual(refused.status, 403)
        XCTAssertEqual(refused.json["details"]?.objectValue?["scope"], "docs:write")
        let w = try HTTPTestClient(port: port, key: full)
        XCTAssertEqual(try w.request("POST", "/v1/docs", ["doc": "d", "owner": "bob"]).status, 201)
        XCTAssertEqual(try r.request("GET", "/v1/docs/d").status, 200, "docs:read reads")

        // Listed; revoked: its next request is 401.
        let listed = try admin(db, "api-key", "list", "--json")
        XCTAssertTrue(listed.contains(#""name":"search""#) && listed.contains(#""user":"api:search""#), listed)
        try admin(db, "api-key", "revoke", "search")
        XCTAssertEqual(try r.request("GET", "/v1/docs/d").status, 401)
        let bad = try runAdmin(db, ["api-key", "create", "x", "--scope", "docs:everything"])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.err.contains("unknown scope"), bad.err)
    }

    func testABackendMakesReadsEditsSharesDeletesAndBringsBackADocument() throws {
        let db = try TestDatabase(users: ["bob", "alice", "carol"])
        let s = try apiServer(db)
        let api = try HTTPTestClient(port: try XCTUnwrap(s.apiPort), key: try key(db, "backend", "docs:read", "docs:write", "access:write"))

        let made = try api.request("POST", "/v1/docs", ["doc": "plan/q3", "title": "Q3 plan", "owner": "bob"])
        XCTAssertEqual(made.status, 201, String(decoding: made.body, as: UTF8.self))
        XCTAssertEqual(made.headers["location"], "/v1/docs/plan%2Fq3")
        XCTAssertEqual(try api.request("POST", "/v1/docs", ["doc": "plan/q3", "owner": "bob"]).code, "conflict")
        XCTAssertEqual(try api.request("POST", "/v1/docs", ["owner": "nobody"]).status, 404)

        // Shared with alice, who has it open in a terminal.
        let shared = try api.request("PUT", "/v1/docs/plan%2Fq3/roles/alice", ["role": "editor"])
        XCTAssertEqual(shared.json["role"], "editor")
        let alice = try Terminal(port: s.port)
        try alice.hello("alice", db)
        XCTAssertEqual(try alice.request("open", [("doc", "plan/q3")])["ok"], true)

        // An edit as alice: committed, pushed to her terminal, hers to undo.
        let submit: JSON = ["tx": "import-1", "base": 0, "user": "alice", "action": "Import",
                            "ops": [textNode("t", "imported")]]
        let v1 = try api.request("POST", "/v1/docs/plan%2Fq3/submit", submit)
        XCTAssertEqual(v1.status, 200, String(decoding: v1.body, as: UTF8.self))
        XCTAssertEqual(v1.json["version"], 1)
        let pushed = try alice.push("events")
        let event = pushed["events"]?.arrayValue?.first?.objectValue
        XCTAssertEqual(event?["user"], "alice")
        XCTAssertEqual(event?["client"], "api:backend")
        XCTAssertEqual(try api.request("POST", "/v1/docs/plan%2Fq3/submit", submit).json["version"], 1, "the same tx: the same version")
        // Behind the head: rebased, as a terminal's submit.
        let late = try api.request("POST", "/v1/docs/plan%2Fq3/submit",
                                   ["tx": "svc-1", "base": 0, "ops": [["op": "set", "node": "root", "key": "status", "value": "draft"]]])
        XCTAssertEqual(late.json["version"], 2, String(decoding: late.body, as: UTF8.self))
        XCTAssertEqual(try api.request("POST", "/v1/docs/plan%2Fq3/submit",
                                       ["tx": "c-1", "base": 2, "user": "carol", "ops": [["op": "set", "node": "root", "key": "k", "value": 1]]]).status,
                       403, "carol has no role")
        let undo = try alice.request("undo", [("doc", "plan/q3")])
        XCTAssertEqual(undo["ok"], true, "alice undoes the import made for her: \(JSONWriter.string(.object(undo)))")

        // Read back: metadata, state at the head and at version 1, events in pages.
        let info = try api.request("GET", "/v1/docs/plan%2Fq3").json
        XCTAssertEqual(info["head"], 3)
        XCTAssertEqual(info["title"], "Q3 plan")
        XCTAssertEqual(info["owner"], "bob")
        XCTAssertEqual(info["members"], [["user": "alice", "role": "editor"]])
        XCTAssertEqual(info["deleted"], .null)
        let head = try api.request("GET", "/v1/docs/plan%2Fq3/state").json
        XCTAssertNil(head["state"]?.objectValue?["nodes"]?.objectValue?["t"], "undone")
        let atOne = try api.request("GET", "/v1/docs/plan%2Fq3/state?version=1").json
        XCTAssertEqual(atOne["state"]?.objectValue?["nodes"]?.objectValue?["t"]?.objectValue?["text"], "imported")
        XCTAssertEqual(try api.request("GET", "/v1/docs/plan%2Fq3/state?version=9").code, "version")
        let page = try api.request("GET", "/v1/docs/plan%2Fq3/events?after=0&limit=2").json
        XCTAssertEqual(page["events"]?.arrayValue?.map { $0.objectValue?["version"] }, [1, 2])
        XCTAssertEqual(page["next"], 2)
        let rest = try api.request("GET", "/v1/docs/plan%2Fq3/events?after=2").json
        XCTAssertEqual(rest["events"]?.arrayValue?.first?.objectValue?["kind"], "undo")
        XCTAssertEqual(rest["next"], .null)

        // Roles away: alice's terminal loses it.
        XCTAssertEqual(try api.request("DELETE", "/v1/docs/plan%2Fq3/roles/alice").json["role"], .null)
        XCTAssertEqual(try alice.push("closed")["reason"], "forbidden")
        // Deleted, then brought back.
        XCTAssertEqual(try api.request("DELETE", "/v1/docs/plan%2Fq3").json["deleted"], true)
        XCTAssertEqual(try api.request("GET", "/v1/docs/plan%2Fq3/state").status, 404)
        XCTAssertNotEqual(try api.request("GET", "/v1/docs/plan%2Fq3").json["deleted"], .null, "metadata says when")
        XCTAssertEqual(try api.request("POST", "/v1/docs/plan%2Fq3/undelete").json["deleted"], false)
        XCTAssertEqual(try api.request("POST", "/v1/docs/plan%2Fq3/undelete").code, "conflict", "not deleted now")
        XCTAssertEqual(try api.request("GET", "/v1/docs/plan%2Fq3/state").status, 200)
    }

    func testBadRequestsAreProblemDocumentsAndPipelinedRequestsAreAnsweredInOrder() throws {
        let db = try TestDatabase(users: ["bob"])
        let s = try apiServer(db, ["--api-requests-per-second", "5"])
        let port = try XCTUnwrap(s.apiPort)
        let k = try key(db, "backend", "docs:read", "docs:write")
        let c = try HTTPTestClient(port: port, key: k)
        XCTAssertEqual(try c.request("GET", "/v2/anything").status, 404)
        let wrong = try c.request("PATCH", "/v1/docs/d")
        XCTAssertEqual(wrong.status, 405)
        XCTAssertEqual(wrong.headers["allow"], "GET, DELETE")
        XCTAssertEqual(try c.request("POST", "/v1/docs", nil, headers: ["Content-Type": "text/plain"]).status, 400)
        let notJSON = c.requestBytes("POST", "/v1/docs", nil, headers: ["Content-Type": "application/json"]).dropLast(0)
        c.send(Array(notJSON))
        XCTAssertEqual(try c.response().code, "bad_request", "an empty object: no owner")
        XCTAssertEqual(try c.request("GET", "/v1/docs/d/events?limit=0").code, "bad_request")

        // Two requests in one write: two answers, in order (the rate limit allows 10 at once).
        let pipelined = try HTTPTestClient(port: port, key: k)
        pipelined.send(pipelined.requestBytes("POST", "/v1/docs", ["doc": "p", "owner": "bob"]) + pipelined.requestBytes("GET", "/v1/docs/p"))
        XCTAssertEqual(try pipelined.response().status, 201)
        XCTAssertEqual(try pipelined.response().json["doc"], "p")

        // Past the key's rate: 429 with Retry-After, in whole seconds.
        var limited: HTTPTestClient.Response?
        for _ in 0..<20 {
            let r = try c.request("GET", "/v1/docs/p")
            if r.status == 429 { limited = r; break }
        }
        XCTAssertEqual(limited?.code, "rate_limited")
        XCTAssertNotNil(limited?.headers["retry-after"].flatMap { Int($0) })

        // Not HTTP: 400, and the connection ends; a method HTTP does not know: 405.
        let junk = try HTTPTestClient(port: port)
        junk.send(Array("GET /v1/docs/p HTTP/1.1\r\nA header without a colon\r\n\r\n".utf8))
        XCTAssertEqual(try junk.response().status, 400)
        XCTAssertTrue(junk.isClosedByServer())
        let brew = try HTTPTestClient(port: port)
        brew.send(Array("BREW /v1/docs/p HTTP/1.1\r\n\r\n".utf8))
        let notAllowed = try brew.response()
        XCTAssertEqual(notAllowed.status, 405)
        XCTAssertEqual(notAllowed.headers["allow"], "GET, POST, PUT, DELETE")
        // A request, then bytes that are not HTTP, in one write: the request is answered, then the refusal, then the end.
        let mixed = try HTTPTestClient(port: port, key: k)
        mixed.send(mixed.requestBytes("GET", "/v1/docs/p") + Array("BREW / HTTP/1.1\r\n\r\n".utf8))
        XCTAssertNotEqual(try mixed.response().status, 405, "the request's own answer first (its key may be past its rate by now)")
        XCTAssertEqual(try mixed.response().status, 405)
        XCTAssertTrue(mixed.isClosedByServer())
        // A body over 1 MiB: 413 from its Content-Length, before it is read.
        let big = try HTTPTestClient(port: port, key: k)
        big.send(Array("POST /v1/docs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n".utf8))
        XCTAssertEqual(try big.response().status, 413)
        // Headers over 16 KiB: 431.
        let long = try HTTPTestClient(port: port, key: k)
        long.send(Array("GET /v1/docs/d HTTP/1.1\r\nX-Filler: \(String(repeating: "a", count: 17_000))\r\n\r\n".utf8))
        XCTAssertEqual(try long.response().status, 431)
        // The terminals' port takes no API requests.
        let terminal = try Terminal(port: s.port)
        try terminal.hello("bob", db)
        XCTAssertEqual(try terminal.request("ping")["ok"], true)
    }
}

extension APITests {
    /// The API served by the least-privilege role of deploy/roles.sql: every route answers, none 5xx.
    func testTheDeployRoleServesEveryRoute() throws {
        let db = try TestDatabase(users: ["bob", "alice"])
        try db.db.execute(script: try String(contentsOfFile: TestDatabase.repositoryRoot + "/deploy/roles.sql", encoding: .utf8))
        let k = try key(db, "backend", "docs:read", "docs:write", "access:write", "events:read")
        let asRole = TestDatabase(reusing: db, conninfo: db.conninfo + " user=rewind_server")
        let s = try apiServer(asRole)
        let api = try HTTPTestClient(port: try XCTUnwrap(s.apiPort), key: k)
        var answers: [(String, Int)] = []
        func call(_ method: String, _ path: String, _ body: JSON? = nil) throws {
            let r = try api.request(method, path, body)
            answers.append(("\(method) \(path)", r.status))
            XCTAssertLessThan(r.status, 300, "\(method) \(path): \(String(decoding: r.body, as: UTF8.self))")
        }
        try call("POST", "/v1/docs", ["doc": "d", "owner": "bob"])
        try call("GET", "/v1/docs/d")
        try call("PUT", "/v1/docs/d/roles/alice", ["role": "editor"])
        try call("POST", "/v1/docs/d/submit", ["tx": "1", "base": 0, "user": "alice", "ops": [textNode("t", "x")]])
        try call("POST", "/v1/docs/d/submit", ["tx": "2", "base": 1, "ops": [["op": "set", "node": "root", "key": "k", "value": 1]]])
        try call("GET", "/v1/docs/d/state?version=1")
        try call("GET", "/v1/docs/d/events")
        try call("DELETE", "/v1/docs/d/roles/alice")
        try call("DELETE", "/v1/docs/d")
        try call("POST", "/v1/docs/d/undelete")
        XCTAssertEqual(answers.count, 10)
        // The log followed by position, as that role.
        let feed = try HTTPTestClient(port: try XCTUnwrap(s.apiPort), key: k)
        feed.send(feed.requestBytes("GET", "/v1/events"))
        XCTAssertEqual(try feed.response().status, 200)
        XCTAssertEqual(feed.events(2).compactMap { $0.data["version"]?.intValue }, [1, 2])
    }
}
