import Foundation
import Glibc
import RewindCore
import RewindStore
import XCTest

/// `--metrics`: what Prometheus scrapes moves by what terminals did, and
/// `/health` follows the database.
final class MetricsTests: XCTestCase {
    func testCountersMoveByWhatTerminalsDid() throws {
        let f = try Fixture(serverArguments: ["--metrics", "127.0.0.1:0"])
        let http = try XCTUnwrap(f.server.metricsPort, "no metrics line on stdout")
        let bob = try f.terminal("bob")
        XCTAssertEqual(try f.alice.request("open", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try bob.request("open", [("doc", "d")])["ok"], true)
        let before = try Scrape(port: http)

        for i in 0..<5 {
            try f.alice.submit("d", tx: "t\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "k", "value": .int(Int64(i))]])
        }
        XCTAssertEqual(try f.alice.request("undo", [("doc", "d"), ("scope", .null)])["ok"], true)
        XCTAssertEqual(try f.alice.request("open", [("doc", "nowhere")]).errorCode, "not_found")
        XCTAssertEqual(try f.alice.request("frobnicate").errorCode, "bad_request")
        f.alice.sendRaw(Array("not json\n".utf8))
        XCTAssertNotNil(try f.alice.nextReply().errorCode)
        _ = try bob.drainPushes()
        let after = try Scrape(port: http)

        XCTAssertEqual(after.delta(before, "rewind_requests_total", ["type": "submit"]), 5)
        XCTAssertEqual(after.delta(before, "rewind_requests_total", ["type": "undo"]), 1)
        XCTAssertEqual(after.delta(before, "rewind_requests_total", ["type": "other"]), 1, "an unknown type counts as other")
        XCTAssertEqual(after.delta(before, "rewind_requests_total", ["type": "malformed"]), 1)
        XCTAssertEqual(after.delta(before, "rewind_request_errors_total", ["type": "open", "code": "not_found"]), 1)
        XCTAssertEqual(after.delta(before, "rewind_request_errors_total", ["type": "other", "code": "bad_request"]), 1)
        XCTAssertEqual(after.delta(before, "rewind_request_errors_total", ["type": "submit", "code": "not_found"]), 0)
        XCTAssertEqual(after["rewind_connections"], 2, "alice and bob (the scrape is not a terminal)")
        XCTAssertEqual(after["rewind_hellos_checking"], 0, "both hellos answered: their places given back")
        XCTAssertEqual(after["rewind_hellos_waiting"], 0)
        XCTAssertEqual(after["rewind_documents_loaded"], 1)
        XCTAssertEqual(after["rewind_document_terminals"], 2)
        // Six events (five submits, one undo), each pushed to bob at least.
        XCTAssertGreaterThanOrEqual(after.delta(before, "rewind_fanout_deliveries_total"), 6)
        XCTAssertGreaterThan(after.delta(before, "rewind_fanout_bytes_total"), 6 * 20)
        XCTAssertGreaterThanOrEqual(after.delta(before, "rewind_commit_batch_entries_sum"), 6, "every entry was in a batch")
        XCTAssertGreaterThanOrEqual(after.delta(before, "rewind_commit_batch_entries_count"), 1)
        XCTAssertEqual(after.delta(before, "rewind_commit_duration_seconds_count"), after.delta(before, "rewind_commit_batch_entries_count"))
        XCTAssertGreaterThan(after.delta(before, "rewind_commit_duration_seconds_sum"), 0)
        XCTAssertEqual(after.delta(before, "rewind_undo_duration_seconds_count", ["kind": "undo"]), 1)
        XCTAssertEqual(after.delta(before, "rewind_undo_duration_seconds_count", ["kind": "redo"]), 0)
        XCTAssertEqual(after["rewind_undo_duration_seconds_bucket", ["kind": "undo", "le": "+Inf"]], 1)
        XCTAssertEqual(after["rewind_pg_reconnects_total"], 0)
        XCTAssertEqual(after["rewind_slow_disconnects_total"], 0)

        bob.disconnect()
        try waitUntil("the connections gauge drops bob") { try Scrape(port: http)["rewind_connections"] == 1 }
        XCTAssertEqual(try Scrape(port: http)["rewind_document_terminals"], 1)
    }

    func testASlowTerminalsDisconnectIsCounted() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--max-output-bytes", "65536", "--metrics", "127.0.0.1:0"])
        let http = try XCTUnwrap(server.metricsPort)
        let writer = try Terminal(port: server.port)
        try writer.hello("alice", db)
        try writer.request("create_doc", [("doc", "d")])
        try writer.share("d", "bob", "viewer")
        let slow = try Terminal(port: server.port, receiveBuffer: 4096)  // opens the document, then never reads
        try slow.hello("bob", db)
        XCTAssertEqual(try slow.request("open", [("doc", "d")])["ok"], true)
        let big = String(repeating: "x", count: 20_000)
        var i = 0
        while try Scrape(port: http)["rewind_slow_disconnects_total"] == 0 {
            guard i < 300 else { throw TestFailure("no slow disconnect after 300 pushes of 20 kB") }
            try writer.submit("d", tx: "w\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "blob", "value": .string(big + String(i))]])
            i += 1
        }
        XCTAssertEqual(try Scrape(port: http)["rewind_slow_disconnects_total"], 1)
    }

    func testSignedTokensAreCountedByResult() throws {
        let db = try TestDatabase()
        let secretFile = NSTemporaryDirectory() + "rewind-metrics-secret-\(getpid())"
        try SignedTokenTests.secret.write(toFile: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        let server = try ServerProcess(database: db, arguments: ["--metrics", "127.0.0.1:0", "--jwt-secret-file", secretFile])
        let http = try XCTUnwrap(server.metricsPort)
        let before = try Scrape(port: http)
        let ann = try Terminal(port: server.port)
        XCTAssertEqual(try ann.request("hello", [("token", .string(try SignedTokenTests.hs256(sub: "ann")))])["ok"], true)
        XCTAssertEqual(try ann.request("refresh", [("token", .string(try SignedTokenTests.hs256(sub: "ann")))])["ok"], true)
        XCTAssertEqual(try ann.request("refresh", [("token", .string(try SignedTokenTests.hs256(sub: "ann", lifetime: -120)))]).errorCode, "unauthorized")
        let late = try Terminal(port: server.port)
        XCTAssertEqual(try late.request("hello", [("token", .string(try SignedTokenTests.hs256(sub: "bo", secret: "another secret, as long as the real one")))]).errorCode, "unauthorized")
        let after = try Scrape(port: http)
        XCTAssertEqual(after.delta(before, "rewind_signed_tokens_total", ["result": "accepted"]), 2, "a hello and a refresh")
        XCTAssertEqual(after.delta(before, "rewind_signed_tokens_total", ["result": "expired"]), 1)
        XCTAssertEqual(after.delta(before, "rewind_signed_tokens_total", ["result": "bad_signature"]), 1)
        XCTAssertFalse(try HTTP.get(port: http, "/metrics").body.contains(SignedTokenTests.secret), "the secret is never shown")
    }

    /// A PostgreSQL that is not there at all (its socket missing): libpq's
    /// words in the 503, not "cannot start a connection".
    func testHealthGivesLibpqsReasonWhenThereIsNoPostgreSQLAtAll() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--metrics", "127.0.0.1:0",
                                                                 "--database", "host=/nonexistent-rewind-\(getpid()) port=5999 dbname=x"])
        let http = try XCTUnwrap(server.metricsPort)
        var down = try HTTP.get(port: http, "/health")
        try? waitUntil("libpq's reason") { down = try HTTP.get(port: http, "/health"); return down.body.contains("No such file or directory") }
        XCTAssertEqual(down.status, 503)
        XCTAssertTrue(down.body.hasPrefix("database unreachable: connection to server on socket \"/nonexistent-rewind-"), down.body)
        XCTAssertTrue(down.body.contains("No such file or directory"), down.body)
        XCTAssertFalse(down.body.dropLast().contains("\n"), "one line: \(down.body)")
    }

    /// Every metric says what it is (`# HELP`), the build is named, and the
    /// process's own figures are there under the usual names.
    func testEveryMetricHasHelpAndTheBuildAndProcessAreDescribed() throws {
        let f = try Fixture(serverArguments: ["--metrics", "127.0.0.1:0"])
        let http = try XCTUnwrap(f.server.metricsPort)
        XCTAssertEqual(try f.alice.request("open", [("doc", "d")])["ok"], true)
        let text = try HTTP.get(port: http, "/metrics").body
        let lines = text.split(separator: "\n").map(String.init)
        let typed = lines.filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        let helped = Set(lines.filter { $0.hasPrefix("# HELP ") }.map { $0.split(separator: " ")[2] })
        XCTAssertGreaterThanOrEqual(typed.count, 15, text)
        for name in typed { XCTAssertTrue(helped.contains(name), "\(name) has no # HELP line") }
        XCTAssertTrue(lines.contains("rewind_build_info{version=\"rewind/0.1\"} 1.0"), text)
        for name in ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds"] {
            let value = lines.first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
            XCTAssertNotNil(value, "\(name) missing:\n\(text)")
            XCTAssertGreaterThan(value ?? 0, 0, name)
        }
        let rss = lines.first { $0.hasPrefix("process_resident_memory_bytes ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
        XCTAssertGreaterThan(rss, 1_000_000, "a server's resident memory is megabytes")
        let started = lines.first { $0.hasPrefix("process_start_time_seconds ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
        XCTAssertEqual(started, Date().timeIntervalSince1970, accuracy: 120, "started moments ago")
    }

    func testHealthIsUnavailableWithTheReasonWhileTheDatabaseIsUnreachable() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--metrics", "127.0.0.1:0", "--db-timeout", "2"])
        let http = try XCTUnwrap(server.metricsPort)
        XCTAssertEqual(try HTTP.get(port: http, "/health").status, 200)
        XCTAssertEqual(try HTTP.get(port: http, "/health").body, "ok\n")

        // Only this test's database goes away: it refuses new connections and
        // its sessions (the server's, and the harness's own) are ended.
        let admin = try Database("dbname=postgres")
        try admin.query("ALTER DATABASE \(db.name) ALLOW_CONNECTIONS false")
        defer { _ = try? admin.query("ALTER DATABASE \(db.name) ALLOW_CONNECTIONS true") }
        _ = try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [db.name])
        // First the lost connection (a query under way may fail with it), then
        // the refused reconnects, in libpq's words: each a 503 saying why.
        var down = try HTTP.get(port: http, "/health")
        let deadline = Date().addingTimeInterval(10)
        while !down.body.contains("not currently accepting connections") && Date() < deadline {
            if down.status != 200 {
                XCTAssertEqual(down.status, 503)
                XCTAssertTrue(down.body.hasPrefix("database unreachable: "), down.body)
            }
            usleep(100_000)
            down = try HTTP.get(port: http, "/health")
        }
        XCTAssertEqual(down.status, 503)
        XCTAssertTrue(down.body.hasPrefix("database unreachable: "), down.body)
        XCTAssertTrue(down.body.contains("not currently accepting connections"), "libpq's reason: \(down.body)")
        XCTAssertEqual(try HTTP.get(port: http, "/metrics").status, 200, "metrics are served without the database")

        try admin.query("ALTER DATABASE \(db.name) ALLOW_CONNECTIONS true")
        try waitUntil("health back to 200 once the database is reachable", seconds: 20) { try HTTP.get(port: http, "/health").status == 200 }
        // Reads, two writers and the listening connection were each made again
        // (health turns 200 with the first of them: the others may take a moment more).
        try? waitUntil("four reconnects counted", seconds: 10) { try Scrape(port: http)["rewind_pg_reconnects_total"] == 4 }
        XCTAssertEqual(try Scrape(port: http)["rewind_pg_reconnects_total"], 4)
    }

    func testTheEndpointAnswersGetOfItsTwoPathsAndClosesEveryExchange() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--metrics", "127.0.0.1:0"])
        let http = try XCTUnwrap(server.metricsPort)
        let metrics = try HTTP.get(port: http, "/metrics?x=1")
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.head.contains("Content-Type: text/plain; version=0.0.4"), metrics.head)
        XCTAssertTrue(metrics.head.contains("Connection: close"), metrics.head)
        XCTAssertEqual(try HTTP.get(port: http, "/").status, 404)
        XCTAssertEqual(try HTTP.exchange(port: http, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n").status, 405)
        XCTAssertEqual(try HTTP.exchange(port: http, "hello there\r\n\r\n").status, 400)
        XCTAssertEqual(try HTTP.exchange(port: http, "GET /" + String(repeating: "a", count: 9_000)).status, 431)
        // A head that never ends is answered 408 (after 5 s).
        let start = Date()
        XCTAssertEqual(try HTTP.exchange(port: http, "GET /health HTTP/1.1\r\n").status, 408)
        XCTAssertGreaterThan(Date().timeIntervalSince(start), 4)
    }

}

/// Polls `condition` every 50 ms until it holds; fails after `seconds`.
func waitUntil(_ what: String, seconds: Double = 5, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while try !condition() {
        guard Date() < deadline else { throw TestFailure("not within \(seconds) s: \(what)") }
        usleep(50_000)
    }
}

/// One scrape of `GET /metrics`, parsed: every line not a comment is
/// `name{label="value",…} value` (or `name value`).
struct Scrape {
    struct Sample {
        let name: String
        let labels: [String: String]
        let value: Double
    }
    let samples: [Sample]

    init(port: Int) throws {
        let r = try HTTP.get(port: port, "/metrics")
        guard r.status == 200 else { throw TestFailure("GET /metrics answered \(r.status): \(r.body)") }
        samples = try r.body.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(Self.sample)
    }

    private static func sample(_ line: Substring) throws -> Sample {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
            throw TestFailure("not a sample line: \(line)")
        }
        let series = line[..<space]
        guard let brace = series.firstIndex(of: "{") else { return Sample(name: String(series), labels: [:], value: value) }
        guard series.hasSuffix("}") else { throw TestFailure("labels not closed: \(line)") }
        var labels: [String: String] = [:]
        for pair in series[series.index(after: brace)..<series.index(before: series.endIndex)].split(separator: ",") {
            guard let eq = pair.firstIndex(of: "="), pair[pair.index(after: eq)...].hasPrefix("\""), pair.hasSuffix("\"") else {
                throw TestFailure("not a label: \(pair) in \(line)")
            }
            labels[String(pair[..<eq])] = String(pair[pair.index(eq, offsetBy: 2)..<pair.index(before: pair.endIndex)])
        }
        return Sample(name: String(series[..<brace]), labels: labels, value: value)
    }

    /// The sample with exactly these labels; 0 when there is none (a counter not yet moved).
    subscript(_ name: String, _ labels: [String: String] = [:]) -> Double {
        samples.first { $0.name == name && $0.labels == labels }?.value ?? 0
    }

    func delta(_ before: Scrape, _ name: String, _ labels: [String: String] = [:]) -> Double {
        self[name, labels] - before[name, labels]
    }
}

/// A raw HTTP/1.1 client: one request per connection, read until the server closes.
enum HTTP {
    struct Response {
        let status: Int
        let head: String
        let body: String
    }

    static func get(port: Int, _ path: String) throws -> Response {
        try exchange(port: port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    }

    static func exchange(port: Int, _ request: String) throws -> Response {
        let t = try Terminal(port: port)
        t.sendRaw(Array(request.utf8))
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(t.fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[..<n]
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n"), text.hasPrefix("HTTP/1.1 "),
              let status = Int(text.dropFirst(9).prefix(3)) else { throw TestFailure("not an HTTP response: \(text)") }
        return Response(status: status, head: String(text[..<end.lowerBound]), body: String(text[end.upperBound...]))
    }
}
