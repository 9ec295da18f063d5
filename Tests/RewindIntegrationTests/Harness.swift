import Foundation
import Glibc
import RewindCore
import RewindStore
@_exported import RewindTestSupport
import XCTest

/// A throwaway database on the cluster the test command started (PG* variables),
/// with the schema applied and two users.
final class TestDatabase {
    nonisolated(unsafe) private static var counter = 0
    let name: String
    let conninfo: String
    let db: Database
    var tokens: [String: String] = [:]
    /// Created here (not `reusing` another's): dropped when the test is done with it.
    private var owned = false

    /// `upTo`: apply only the migrations numbered up to it (a database from an earlier release).
    init(users: [String] = ["alice", "bob"], upTo: Int? = nil) throws {
        guard ProcessInfo.processInfo.environment["PGHOST"] != nil else {
            throw XCTSkip("PGHOST is not set: run the tests with scripts/test, which starts PostgreSQL")
        }
        _ = Self.masterKey
        Self.counter += 1
        name = "rewind_test_\(getpid())_\(Self.counter)"
        let admin = try Database("dbname=postgres")
        try admin.query("DROP DATABASE IF EXISTS \(name)")
        try admin.query("CREATE DATABASE \(name)")
        conninfo = "dbname=\(name)"
        db = try Database(conninfo)
        try Migrations.apply(try Migrations.load(from: Self.repositoryRoot + "/schema").filter { $0.version <= (upTo ?? .max) }, to: db)
        for u in users { tokens[u] = try Accounts.addUser(u, db: db) }
        owned = true
    }

    /// Tests leave nothing behind (a run used to leave ~120 databases, ~1 GB):
    /// FORCE ends what still holds a connection (a server process not yet gone).
    deinit {
        guard owned else { return }
        try? Database("dbname=postgres").query("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// The same database as `other`, reached with `conninfo` (another role, say): dropped by `other`.
    init(reusing other: TestDatabase, conninfo: String) {
        name = other.name
        self.conninfo = conninfo
        db = other.db
        tokens = other.tokens
    }

    /// One master key for the run's databases, in a file every server and
    /// `rewind admin` started by a test finds (REWIND_MASTER_KEY_FILE, inherited).
    static let masterKey: MasterKey = {
        let path = NSTemporaryDirectory() + "rewind-test-master-\(getpid()).key"
        unlink(path)
        let key = try! MasterKey.create(path)
        setenv("REWIND_MASTER_KEY_FILE", path, 1)
        return key
    }()

    static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// Rows in the events table of a document.
    func eventCount(_ doc: String) throws -> Int {
        Int(try db.query("SELECT count(*) FROM events WHERE doc = $1", [doc]).int(0, 0)!)
    }
}

/// The real `rewind-server` binary, run as a child process on a free port.
final class ServerProcess {
    let process: ChildProcess
    let stderrPath: String
    private(set) var port = 0
    /// The port of `GET /metrics` and `GET /health`, when started with `--metrics`.
    private(set) var metricsPort: Int?
    /// The server API's port, when started with `--api`.
    private(set) var apiPort: Int?

    static let binDirectory: String = {
        if let dir = ProcessInfo.processInfo.environment["REWIND_BIN_DIR"] { return dir }
        // `swift test` runs .build/<triple>/debug/RewindPackageTests.xctest; the binaries sit beside it.
        var candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path]
        candidates.append(TestDatabase.repositoryRoot + "/.build/debug")
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/rewind-server") } ?? candidates.last!
    }()

    /// `descriptorLimit`: run it under `ulimit -n` that low.
    /// Held while the server runs: a database is dropped when its last holder is done with it.
    let database: TestDatabase

    init(database: TestDatabase, arguments: [String] = [], descriptorLimit: Int? = nil) throws {
        self.database = database
        let args = ["--listen", "127.0.0.1:0", "--database", database.conninfo, "--log-level", "warning"] + arguments
        stderrPath = NSTemporaryDirectory() + "rewind-server-\(database.name)-\(UUID().uuidString.prefix(8)).log"
        if let limit = descriptorLimit {
            process = try ChildProcess("/bin/sh", ["-c", "ulimit -n \(limit) && exec \"$0\" \"$@\"", Self.binDirectory + "/rewind-server"] + args,
                                       stdout: .pipe, stderr: .file(stderrPath))
        } else {
            process = try ChildProcess(Self.binDirectory + "/rewind-server", args, stdout: .pipe, stderr: .file(stderrPath))
        }
        var line = try readLine(timeout: 30)
        if let r = line.range(of: "metrics on 127.0.0.1:") {
            metricsPort = Int(line[r.upperBound...].trimmingCharacters(in: .whitespacesAndNewlines))
            line = try readLine(timeout: 30)
        }
        if let r = line.range(of: "api on 127.0.0.1:") {
            apiPort = Int(line[r.upperBound...].trimmingCharacters(in: .whitespacesAndNewlines))
            line = try readLine(timeout: 30)
        }
        guard let r = line.range(of: "listening on 127.0.0.1:"), let p = Int(line[r.upperBound...].trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestFailure("server did not start: \(line) \(log)")
        }
        port = p
    }

    var pid: pid_t { process.pid }

    var log: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    private func readLine(timeout: Double) throws -> String {
        let fd = process.stdoutFD
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 200) > 0 else { continue }
            var b: UInt8 = 0
            guard read(fd, &b, 1) == 1 else { break }
            if b == 0x0A { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(b)
        }
        throw TestFailure("no line from the server within \(timeout) s; its log: \(log)")
    }

    func kill9() {
        process.signal(SIGKILL)
        process.wait(timeout: 30)
    }

    /// SIGTERM, then the exit status. A server still running a minute later fails the test with its
    /// threads' stacks and log (and is killed): a stop that hangs says where, instead of hanging the run.
    @discardableResult
    func terminate(timeout: Double = 60) -> Int32 {
        do {
            return try process.stop(signal: SIGTERM, timeout: timeout)
        } catch {
            XCTFail("\(error)\nits log:\n\(log.suffix(20_000))")
            return -1
        }
    }

    deinit {
        if process.isRunning { kill9() }
        try? FileManager.default.removeItem(atPath: stderrPath)
    }
}

/// What most tests start from: a database, a server on it, and alice's
/// terminal, hello said, with document `doc` created.
struct Fixture {
    let db: TestDatabase
    let server: ServerProcess
    let alice: Terminal

    /// `doc` is created by alice and shared with bob as an editor (`sharedWith`).
    init(doc: String? = "d", sharedWith: [String: String] = ["bob": "editor"], users: [String] = ["alice", "bob"],
         serverArguments: [String] = []) throws {
        db = try TestDatabase(users: users)
        server = try ServerProcess(database: db, arguments: serverArguments)
        alice = try Terminal(port: server.port)
        try alice.hello("alice", db)
        if let doc {
            try alice.request("create_doc", [("doc", .string(doc))])
            for (user, role) in sharedWith { try alice.share(doc, user, role) }
        }
    }

    /// Another terminal of `user` on the same server, hello said.
    func terminal(_ user: String, client: String? = nil) throws -> Terminal {
        let t = try Terminal(port: server.port)
        try t.hello(user, db, client: client)
        return t
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A blocking TCP socket connected to 127.0.0.1:`port`, reads timing out after `timeout` s.
/// Writes all of `bytes` to `fd` (stops if the peer has gone).
func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var sent = 0
    while sent < bytes.count {
        let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n <= 0 { return }
        sent += n
    }
}

func connectedSocket(port: Int, receiveBuffer: Int32? = nil, timeout: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    if var size = receiveBuffer {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var tv = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard rc == 0 else { close(fd); throw TestFailure("cannot connect to port \(port)") }
    return fd
}

/// A terminal: a blocking TCP client speaking NDJSON, keeping pushes aside
/// while it waits for a reply.
final class Terminal: MessageTerminal {
    let fd: Int32
    private var buffer: [UInt8] = []
    var nextID: Int64 = 1
    var pushes: [JSONObject] = []

    init(port: Int, receiveBuffer: Int32? = nil, timeout: Int = 10) throws {
        fd = try connectedSocket(port: port, receiveBuffer: receiveBuffer, timeout: timeout)
    }

    deinit { close(fd) }

    /// Sends `lines` in one write (as a pasted session does) and returns the
    /// replies by `re`: replies that wait for a commit may come after later ones.
    func pipeline(_ lines: [JSON]) throws -> [Int64: JSONObject] {
        sendRaw(lines.flatMap { Message.line($0) })
        var replies: [Int64: JSONObject] = [:]
        while replies.count < lines.count {
            let m = try next()
            if let re = m["re"]?.intValue { replies[re] = m } else { pushes.append(m) }
        }
        return replies
    }

    /// Drops the connection as a killed client would (the kernel closes the socket).
    func disconnect() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Pushes received so far, after a `ping` round trip: everything the
    /// server sent before answering it (replies and pushes are in order).
    func drainPushes() throws -> [JSONObject] {
        try request("ping")
        defer { pushes = [] }
        return pushes
    }


    func send(_ v: JSON) { sendRaw(Message.line(v)) }

    /// The next line from the server, or nil at end of stream or timeout.
    func readLine() -> [UInt8]? {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<nl])
                buffer.removeFirst(nl + 1)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// The next message, whatever it is.
    func next() throws -> JSONObject {
        guard let line = readLine() else { throw TestFailure("connection closed or silent") }
        guard let o = try JSONParser.parse(line).objectValue else { throw TestFailure("not an object: \(String(decoding: line, as: UTF8.self))") }
        return o
    }

    /// The next message that is not a push (pushes are kept in `pushes`).
    func nextReply() throws -> JSONObject {
        while true {
            let m = try next()
            if m["push"] == nil { return m }
            pushes.append(m)
        }
    }

    /// Shares `doc` (this terminal's user must own it); fails the test if refused.
    func share(_ doc: String, _ user: String, _ role: String? = "editor") throws {
        let r = try request("share", [("doc", .string(doc)), ("user", .string(user)), ("role", role.map { .string($0) } ?? .null)])
        guard r["ok"] == true else { throw TestFailure("share refused: \(JSONWriter.string(.object(r)))") }
    }

    /// Submits and returns the committed version (fails the test on an error reply).
    @discardableResult
    func submit(_ doc: String, tx: String, base: Int64, _ ops: [JSON], file: StaticString = #filePath, line: UInt = #line) throws -> Int64 {
        let r = try request("submit", [("doc", .string(doc)), ("tx", .string(tx)), ("base", .int(base)), ("ops", .array(ops))])
        guard r["ok"] == true, let v = r["version"]?.intValue else {
            throw TestFailure("submit failed: \(JSONWriter.string(.object(r)))")
        }
        return v
    }
}

/// A terminal that sends JSON messages and reads them back, over TCP lines
/// (`Terminal`) or WebSocket frames (`WebSocketTerminal`): requests matched
/// by `re`, pushes kept aside until asked for.
protocol MessageTerminal: AnyObject {
    var fd: Int32 { get }
    var nextID: Int64 { get set }
    var pushes: [JSONObject] { get set }
    func send(_ v: JSON)
    /// The next message, whatever it is.
    func next() throws -> JSONObject
}

extension MessageTerminal {
    /// Writes bytes as they are, all of them (a line cut short, a frame by hand).
    func sendRaw(_ bytes: [UInt8]) { writeAll(fd, bytes) }

    /// Sends a request and returns its reply; pushes that arrive first are kept in `pushes`.
    @discardableResult
    func request(_ type: String, _ fields: [(String, JSON)] = []) throws -> JSONObject {
        let id = nextID
        nextID += 1
        send(.obj([("id", .int(id)), ("type", .string(type))] + fields.map { ($0.0, Optional($0.1)) }))
        return try reply(to: id)
    }

    func reply(to id: Int64) throws -> JSONObject {
        while true {
            let m = try next()
            if m["re"] == .int(id) { return m }
            if m["push"] != nil { pushes.append(m) } else { throw TestFailure("unexpected message \(JSONWriter.string(.object(m)))") }
        }
    }

    /// The next push of `kind` (earlier pushes of other kinds stay queued).
    func push(_ kind: String) throws -> JSONObject {
        if let i = pushes.firstIndex(where: { $0["push"] == .string(kind) }) { return pushes.remove(at: i) }
        while true {
            let m = try next()
            if m["push"] == .string(kind) { return m }
            pushes.append(m)
        }
    }

    /// Says hello; fails the test if the server refuses.
    @discardableResult
    func hello(_ user: String, _ db: TestDatabase, client: String? = nil) throws -> JSONObject {
        var f: [(String, JSON)] = [("user", .string(user)), ("token", .string(db.tokens[user]!))]
        if let client { f.append(("client", .string(client))) }
        let r = try request("hello", f)
        guard r["ok"] == true else { throw TestFailure("hello refused: \(JSONWriter.string(.object(r)))") }
        return r
    }

}

extension Terminal {
    /// A document of `nodes` views, each with a 200,000-character prop (about 0.2 MB a node).
    func createLargeDocument(_ doc: String, nodes: Int) throws {
        XCTAssertEqual(try request("create_doc", [("doc", .string(doc))])["ok"], true)
        var version: Int64 = 0
        for first in stride(from: 0, to: nodes, by: 4) {
            let ops: [JSON] = (first..<min(first + 4, nodes)).map { i in
                let letter = Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8(i % 26)))
                return ["op": "create", "node": .string("n\(i)"), "parent": "root", "index": .int(Int64(i)), "kind": "view",
                        "frame": [0, .int(Int64(i) * 10), 100, 10], "props": ["blob": .string(String(repeating: letter, count: 200_000))]]
            }
            version = try submit(doc, tx: "big-\(first)", base: version, ops)
        }
    }
}

extension JSONObject {
    var errorCode: String? { self["error"]?.objectValue?["code"]?.stringValue }
    var isOK: Bool { self["ok"] == true }
}

/// `rewind admin ARGS --database …` as an operator runs it: exit status and what it printed.
func runAdmin(_ db: TestDatabase, _ args: [String]) throws -> (status: Int32, out: String, err: String) {
    try runRewind(["admin"] + args + ["--database", db.conninfo])
}

/// `rewind ARGS` as given (no database added: for unreachable ones and usage errors).
func runRewind(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
    try runProgram(ServerProcess.binDirectory + "/rewind", args)
}

/// Runs `path` with `args` to its end (killed after `timeout` s): its exit status (the signal's number if one
/// ended it) and what it printed. ChildProcess rather than Foundation's Process, whose `waitUntilExit` once
/// waited forever for a script that had ended (a fresh clone's run of FailoverTests).
func runProgram(_ path: String, _ args: [String], timeout: Double = 300) throws -> (status: Int32, out: String, err: String) {
    try ChildProcess.run(path, args, timeout: timeout)
}

/// A focusable text node `id` at the top of the root.
func textNode(_ id: String, _ text: String) -> JSON {
    ["op": "create", "node": .string(id), "parent": "root", "index": 0, "kind": "text", "frame": [0, 0, 100, 20],
     "focusable": true, "text": .string(text)]
}

/// `rewind admin ARGS --database …` on the test database; its stdout (fails the test on a non-zero exit).
@discardableResult
func admin(_ db: TestDatabase, _ args: String...) throws -> String { try admin(db, args) }

@discardableResult
func admin(_ db: TestDatabase, _ args: [String]) throws -> String {
    let r = try runAdmin(db, args)
    guard r.status == 0 else { throw TestFailure("rewind admin \(args.joined(separator: " ")) exited \(r.status): \(r.err)") }
    return r.out
}

/// `body` with no REWIND_MASTER_KEY_FILE in the environment (for the programs it starts).
func withoutMasterKey<T>(_ body: () throws -> T) rethrows -> T {
    let path = ProcessInfo.processInfo.environment["REWIND_MASTER_KEY_FILE"]
    unsetenv("REWIND_MASTER_KEY_FILE")
    defer { if let path { setenv("REWIND_MASTER_KEY_FILE", path, 1) } }
    return try body()
}

extension Replay {
    /// With the run's master key: what the tests' servers seal content with.
    static func document(_ doc: String, to version: Int64? = nil, db: Database) throws -> DocumentLedger {
        try document(doc, to: version, db: db, keys: DocumentKeys(master: TestDatabase.masterKey))
    }
}

extension Verify {
    /// Everything checked with the run's master key: nil when all holds, else what failed.
    static func document(_ doc: String, db: Database) throws -> String? {
        switch try document(doc, anchors: [], db: db, keys: DocumentKeys(master: TestDatabase.masterKey)) {
        case .success(.whole(unbound: 0)): return nil
        case let .success(checked): return "only partly checked: \(checked)"
        case let .failure(problem): return problem.description
        }
    }
}
