import Foundation
import Glibc
import Logging
import RewindCore
import RewindLoop
@testable import RewindServer
import RewindStore
import XCTest

/// A `Server` in this process whose loop the test turns (`EventLoop.runOnce`),
/// on a database of its own (PostgreSQL is real; so are the sockets). What
/// happens between two turns is decided by the test, not by a scheduler: a
/// pipeline written at once is read in one turn, and what the server answers
/// before its next database round trip is known.
final class SteppedServer {
    let server: Server
    let db: Database
    let tokens: [String: String]
    let databaseName: String
    private let ownsDatabase: Bool
    private var port = 0
    private var stopped = false

    nonisolated(unsafe) private static var counter = 0
    /// One master key for every stepped server (instances sharing a database must agree).
    static let masterKey = MasterKey(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) }, path: "(in memory)")

    /// `sharing`: a second instance on the first one's database (its users and tokens).
    init(users: [String] = ["alice", "bob"], sharing other: SteppedServer? = nil,
         configure: (inout ServerConfig) -> Void = { _ in }) throws {
        guard ProcessInfo.processInfo.environment["PGHOST"] != nil else {
            throw XCTSkip("PGHOST is not set: run the tests with scripts/test, which starts PostgreSQL")
        }
        let name: String
        if let other {
            name = other.databaseName
            db = try Database("dbname=\(name)")
            tokens = other.tokens
        } else {
            Self.counter += 1
            name = "rewind_stepped_\(getpid())_\(Self.counter)"
            let admin = try Database("dbname=postgres")
            try admin.query("DROP DATABASE IF EXISTS \(name)")
            try admin.query("CREATE DATABASE \(name)")
            db = try Database("dbname=\(name)")
            var root = URL(fileURLWithPath: #filePath)
            for _ in 0..<3 { root.deleteLastPathComponent() }
            try Migrations.apply(try Migrations.load(from: root.path + "/schema"), to: db)
            var tokens: [String: String] = [:]
            for u in users { tokens[u] = try Accounts.addUser(u, db: db) }
            self.tokens = tokens
        }
        databaseName = name
        ownsDatabase = other == nil

        var config = ServerConfig()
        config.port = 0
        config.conninfo = "dbname=\(name)"
        config.masterKey = Self.masterKey
        configure(&config)
        var logger = Logger(label: "rewind-server-under-test")
        logger.logLevel = .error
        server = Server(config: config, logger: logger)
        let listening = Box(0)
        try server.start(onListening: { listening.value = $0 })
        try turn(until: { listening.value != 0 }, "the server to listen")
        port = listening.value
    }

    deinit {
        stop()
        // A second instance shares the first one's database: the first drops it.
        if ownsDatabase { try? Database("dbname=postgres").query("DROP DATABASE IF EXISTS \(databaseName) WITH (FORCE)") }
    }

    /// One loop turn, then a short pause for the database and the kernel.
    func turn() {
        server.loop.runOnce()
        usleep(200)
    }

    /// Turns the loop until `done` holds (at most `seconds`).
    func turn(until done: () throws -> Bool, within seconds: Double = 10, _ what: @autoclosure () -> String) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while try !done() {
            guard Date() < deadline else { throw TestFailure("waited \(seconds) s for \(what())") }
            turn()
        }
    }

    /// A connected terminal of `user`, hello said.
    func terminal(_ user: String, client: String? = nil) throws -> SteppedTerminal {
        let t = try SteppedTerminal(self, port: port)
        try t.hello(user, client: client)
        return t
    }

    /// A connected terminal that has said nothing yet.
    func connect() throws -> SteppedTerminal { try SteppedTerminal(self, port: port) }

    /// Shuts down as on SIGTERM and runs the loop until everything is closed.
    func stop() {
        guard !stopped else { return }
        stopped = true
        server.shutdown()
        server.loop.run()
        // Its epoll, eventfd and signal pipe go too: a run makes ~60 stepped servers in one process.
        XCTAssertTrue(server.loop.close(), "still open on the stepped server's loop: \(server.loop.openHandles)")
    }

    /// The runtime of a loaded document.
    func document(_ id: String) -> DocumentRuntime? { server.documents[id] }

    func eventCount(_ doc: String) throws -> Int {
        Int(try db.query("SELECT count(*) FROM events WHERE doc = $1", [doc]).int(0, 0)!)
    }
}

final class Box<T>: @unchecked Sendable {
    var value: T
    init(_ v: T) { value = v }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A terminal of a `SteppedServer`: it writes whole pipelines at once and
/// reads what has arrived whenever the test turns the server's loop.
final class SteppedTerminal {
    private(set) var fd: Int32
    private let server: SteppedServer  // kept alive while a terminal is
    private var buffer: [UInt8] = []
    private var nextID: Int64 = 1
    /// Every message received, in order (replies and pushes).
    private(set) var received: [JSONObject] = []
    private(set) var closed = false

    fileprivate init(_ server: SteppedServer, port: Int, receiveBuffer: Int32? = nil) throws {
        self.server = server
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        // Completes in the kernel's backlog, before the server's loop accepts it.
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { close(fd); throw TestFailure("cannot connect to port \(port)") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Closes the socket now, as a client that leaves does (with what the
    /// server sent still unread, the kernel resets the connection).
    func leave() {
        close(fd)
        fd = -1
    }

    /// Makes the kernel hold little for this terminal: a terminal that stops reading soon looks slow.
    func shrinkReceiveBuffer(to bytes: Int32) {
        var size = bytes
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Writes `requests` in one write, as a pasted session does; returns their ids.
    @discardableResult
    func pipeline(_ requests: [(type: String, fields: [(String, JSON)])]) -> [Int64] {
        var bytes: [UInt8] = []
        var ids: [Int64] = []
        for r in requests {
            ids.append(nextID)
            bytes += Message.line(.obj([("id", .int(nextID)), ("type", .string(r.type))] + r.fields.map { ($0.0, Optional($0.1)) }))
            nextID += 1
        }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            sent += n
        }
        return ids
    }

    /// Writes bytes as they are (a line cut short, say).
    func sendRaw(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Reads what has arrived, without waiting.
    func read() {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n == 0 { closed = true }
            guard n > 0 else { break }
            buffer.append(contentsOf: chunk[..<n])
        }
        while let nl = buffer.firstIndex(of: 0x0A) {
            let line = Array(buffer[..<nl])
            buffer.removeFirst(nl + 1)
            if let o = try? JSONParser.parse(line).objectValue { received.append(o) }
        }
    }

    /// The position in `received` of the reply to `id` (nil: not arrived).
    func position(ofReplyTo id: Int64) -> Int? {
        read()
        return received.firstIndex { $0["re"] == .int(id) }
    }

    /// Turns the server's loop until the reply to `id` arrives.
    func reply(to id: Int64, within seconds: Double = 10) throws -> JSONObject {
        try server.turn(until: { position(ofReplyTo: id) != nil }, within: seconds, "the reply to request \(id)")
        return received[position(ofReplyTo: id)!]
    }

    /// Sends one request and turns the loop until its reply.
    @discardableResult
    func request(_ type: String, _ fields: [(String, JSON)] = []) throws -> JSONObject {
        try reply(to: pipeline([(type, fields)])[0])
    }

    /// The first push of `kind` matching `test` from `received`, turning the loop until there is one.
    func push(_ kind: String, where test: (JSONObject) -> Bool = { _ in true }) throws -> JSONObject {
        var found: JSONObject?
        try server.turn(until: {
            read()
            found = received.first { $0["push"] == .string(kind) && test($0) }
            return found != nil
        }, "a \(kind) push")
        return found!
    }

    func hello(_ user: String, client: String? = nil) throws {
        var f: [(String, JSON)] = [("user", .string(user)), ("token", .string(server.tokens[user]!))]
        if let client { f.append(("client", .string(client))) }
        let r = try request("hello", f)
        guard r["ok"] == true else { throw TestFailure("hello refused: \(JSONWriter.string(.object(r)))") }
    }
}

extension JSONObject {
    var errorCode: String? { self["error"]?.objectValue?["code"]?.stringValue }
    var isOK: Bool { self["ok"] == true }
}

/// A server with document "d" (alice's, `seed` as its first event, shared with bob as an editor) and alice's terminal.
func seededServer(_ seed: [JSON], configure: (inout ServerConfig) -> Void = { _ in }) throws -> (SteppedServer, SteppedTerminal) {
    let s = try SteppedServer(configure: configure)
    let alice = try s.terminal("alice", client: "A")
    XCTAssertTrue(try alice.request("create_doc", [("doc", "d")]).isOK)
    XCTAssertTrue(try alice.request("share", [("doc", "d"), ("user", "bob"), ("role", "editor")]).isOK)
    XCTAssertTrue(try alice.request("submit", [("doc", "d"), ("tx", "seed"), ("base", 0), ("ops", .array(seed))]).isOK)
    return (s, alice)
}

/// The replies to `ids`, in that order, turning the loop until each arrives.
func replies(_ t: SteppedTerminal, _ ids: [Int64]) throws -> [JSONObject] {
    try ids.map { id throws in try t.reply(to: id) }
}
