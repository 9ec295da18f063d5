import Foundation
import XCTest
@testable import RewindCore

/// scripts/lib/webhook_receiver.py, run as a receiver an app would run: it
/// verifies each post's signature by the Standard Webhooks specification
/// (Python's hmac, not Rewind's code) and reports every request it got.
final class WebhookReceiver: @unchecked Sendable {
    struct Request {
        let id: String
        let verified: Bool
        let answered: String
        let body: JSONObject
        var position: Int64? { body["position"]?.intValue }
        var doc: String? { body["doc"]?.stringValue }
        var delivered: Bool { answered == "204" }
    }

    private let process: ChildProcess
    private let lock = NSLock()
    private var seen: [Request] = []
    private(set) var port = 0

    init() throws {
        process = try ChildProcess("/usr/bin/env", ["python3", TestDatabase.repositoryRoot + "/scripts/lib/webhook_receiver.py"],
                                   stdin: .pipe, stdout: .pipe, stderr: .inherit)
        let ready = DispatchSemaphore(value: 0)
        let fd = process.stdoutFD
        Thread.detachNewThread { [weak self, process] in
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = read(fd, &chunk, chunk.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                _ = process  // the descriptor stays open while this reads it
                buffer += chunk[..<n]
                while let nl = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[..<nl], as: UTF8.self)
                    buffer.removeSubrange(...nl)
                    guard let self else { return }
                    if line.hasPrefix("listening ") {
                        self.port = Int(line.dropFirst("listening ".count)) ?? 0
                        ready.signal()
                    } else if let o = (try? JSONParser.parse(line))?.objectValue, let id = o["id"]?.stringValue {
                        let answered = o["answered"].map { $0.intValue.map(String.init) ?? $0.stringValue ?? "" } ?? ""
                        let r = Request(id: id, verified: o["verified"] == true, answered: answered, body: o["body"]?.objectValue ?? JSONObject())
                        self.lock.withLock { self.seen.append(r) }
                    }
                }
            }
        }
        guard ready.wait(timeout: .now() + 10) == .success, port > 0 else { throw TestFailure("the webhook receiver did not start") }
    }

    var url: String { "http://127.0.0.1:\(port)/hooks/rewind" }

    /// `rewind admin webhook add` of this receiver (`extra`: its options); tells the receiver the secret; answers the id.
    func add(to db: TestDatabase, _ extra: [String] = ["--after", "0"]) throws -> Int64 {
        let out = try admin(db, ["webhook", "add", url, "--json"] + extra)
        let made = try XCTUnwrap((try JSONParser.parse(out.trimmingCharacters(in: .whitespacesAndNewlines))).objectValue)
        control("secret " + (made["secret"]?.stringValue ?? ""))
        return try XCTUnwrap(made["id"]?.intValue)
    }

    /// `rewind admin webhook list --json`.
    static func listed(_ db: TestDatabase) throws -> [JSONObject] {
        try admin(db, "webhook", "list", "--json").split(separator: "\n").compactMap { (try JSONParser.parse(String($0))).objectValue }
    }

    /// The log's positions, as a follower reads them (what every receiver must get).
    static func logPositions(_ db: TestDatabase, prefix: String? = nil) throws -> [Int64] {
        try admin(db, ["follow", "--caught-up", "--after", "0"] + (prefix.map { ["--doc-prefix", $0] } ?? [])).split(separator: "\n")
            .compactMap { (try JSONParser.parse(String($0))).objectValue?["position"]?.intValue }
    }

    func control(_ line: String) {
        process.write(line + "\n")
        Thread.sleep(forTimeInterval: 0.05)
    }

    var requests: [Request] { lock.withLock { seen } }
    var delivered: [Request] { requests.filter(\.delivered) }

    /// Waits until `condition` holds of the requests so far (or `within` s pass); answers them.
    @discardableResult
    func wait(within: Double = 15, until condition: ([Request]) -> Bool) -> [Request] {
        let deadline = Date().addingTimeInterval(within)
        while Date() < deadline {
            let r = requests
            if condition(r) { return r }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return requests
    }

    deinit {
        process.signal(SIGTERM)
        process.wait(timeout: 10)
    }
}
