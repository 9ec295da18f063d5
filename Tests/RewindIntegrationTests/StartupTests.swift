import Foundation
import RewindCore
import RewindStore
import XCTest

/// Starting and stopping before serving. A server started on a database
/// whose schema is behind its release (an upgrade without `rewind admin
/// migrate`) says so and exits; before, it waited for tables that were not
/// there, logged "PostgreSQL not reachable yet" and answered `unavailable`
/// for ever. A server stopped before it serves exits at once; before, the
/// start-up wait kept it for the rest of its 10 s, and it then logged both
/// "PostgreSQL not reachable yet" and "commits still outstanding".
final class StartupTests: XCTestCase {
    func testRequiredIsTheNewestMigrationOfTheSchemaFolder() throws {
        let newest = try Migrations.load(from: TestDatabase.repositoryRoot + "/schema").map(\.version).max()
        XCTAssertEqual(Migrations.required, newest, "a new migration: raise Migrations.required with it")
    }

    func testAServerRefusesADatabaseBehindItsRelease() throws {
        let db = try TestDatabase(upTo: Migrations.required - 1)
        let run = try runServer(db.conninfo)
        XCTAssertNotEqual(run.status, 0)
        XCTAssertFalse(run.out.contains("listening"), run.out)
        XCTAssertTrue(run.err.contains("the database's schema is at migration \(Migrations.required - 1) and this release needs \(Migrations.required)"), run.err)
        XCTAssertTrue(run.err.contains("rewind admin migrate"), run.err)
        XCTAssertFalse(run.err.contains("not reachable"), run.err)
        XCTAssertFalse(run.err.contains("commits still outstanding"), run.err)
        // The refusal is the one error: statements cut short by the stop itself are not failures to report.
        XCTAssertFalse(run.err.contains("LISTEN failed"), run.err)
    }

    func testAServerRefusesADatabaseWithoutTheSchema() throws {
        let db = try TestDatabase(users: [], upTo: 0)
        let run = try runServer(db.conninfo)
        XCTAssertNotEqual(run.status, 0)
        XCTAssertTrue(run.err.contains("the database has no Rewind schema: run `rewind admin migrate`"), run.err)
        XCTAssertFalse(run.err.contains("LISTEN failed"), run.err)
    }

    /// A newer release may migrate first (migrations keep what older servers use): this one still serves.
    func testAServerServesADatabaseAheadOfItsRelease() throws {
        let db = try TestDatabase()
        try db.db.query("INSERT INTO schema_migrations (version, name) VALUES ($1, 'from_a_newer_release.sql')", [String(Migrations.required + 1)])
        let server = try ServerProcess(database: db)
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", db)
        XCTAssertEqual(try alice.request("create_doc", [("doc", .string("d"))])["ok"], .bool(true))
    }

    /// The check is a guard: a role that may not read `schema_migrations` is served, with a warning.
    func testARoleThatCannotReadTheSchemaVersionIsServedWithAWarning() throws {
        let db = try TestDatabase()
        try db.db.execute(script: try String(contentsOfFile: TestDatabase.repositoryRoot + "/deploy/roles.sql", encoding: .utf8))
        try db.db.execute(script: "REVOKE SELECT ON schema_migrations FROM rewind_server")
        let server = try ServerProcess(database: TestDatabase(reusing: db, conninfo: db.conninfo + " user=rewind_server"))
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", db)
        XCTAssertEqual(try alice.request("create_doc", [("doc", .string("d"))])["ok"], .bool(true))
        XCTAssertTrue(server.log.contains("cannot read the schema's version; serving without checking it"), server.log)
    }

    func testAServerStoppedWhileWaitingForPostgreSQLExitsAtOnce() throws {
        // Nothing listens on port 1: the server retries, and would open its listener after the start-up wait.
        let p = try ChildProcess(ServerProcess.binDirectory + "/rewind-server",
                                 ["--listen", "127.0.0.1:0", "--database", "host=127.0.0.1 port=1 dbname=none connect_timeout=2", "--log-level", "info"],
                                 stdout: .null, stderr: .pipe)
        usleep(500_000)
        p.signal(SIGTERM)
        let log = p.readToEnd(timeout: 30).err
        XCTAssertEqual(try p.stop(timeout: 30), 0, log)
        XCTAssertTrue(log.contains("shutting down"), log)
        XCTAssertFalse(log.contains("not reachable yet"), "the start-up wait ran on after the stop: \(log)")
        XCTAssertFalse(log.contains("commits still outstanding"), log)
    }

    /// `rewind-server` on `conninfo` until it exits (at most 30 s): status and what it printed.
    private func runServer(_ conninfo: String) throws -> (status: Int32, out: String, err: String) {
        let r = try ChildProcess.run(ServerProcess.binDirectory + "/rewind-server",
                                     ["--listen", "127.0.0.1:0", "--database", conninfo, "--log-level", "warning"], timeout: 30)
        XCTAssertNotEqual(r.status, SIGKILL, "the server did not exit within 30 s")
        return r
    }
}
