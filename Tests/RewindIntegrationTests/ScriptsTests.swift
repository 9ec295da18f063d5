import Foundation
import XCTest

/// What the two commands set up, as a person gets it.
final class ScriptsTests: XCTestCase {
    /// `bash -c SCRIPT` from the checkout, with `REWIND_PG_FAST` as given (unset: nil); its output.
    func bash(_ script: String, fast: Bool) throws -> (status: Int32, out: String) {
        // A file, not a pipe: a PostgreSQL the script starts may inherit the
        // descriptor and hold a pipe open for ever (its reader would never see the end).
        let path = NSTemporaryDirectory() + "rewind-scripts-\(getpid())-\(UUID().uuidString.prefix(8)).out"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var env = ProcessInfo.processInfo.environment
        env["REWIND_PG_FAST"] = fast ? "1" : nil
        let p = try ChildProcess("/bin/bash", ["-c", script], stdout: .file(path), stderr: .null,
                                 directory: TestDatabase.repositoryRoot, environment: env)
        let status = try p.finish(timeout: 300)
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return (status, text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The cluster `scripts/run` starts is durable even where `scripts/test`
    /// (fsync off, for speed) has run: the tests have a cluster of their own.
    func testTheServerAPersonRunsIsDurableWhateverTheTestsLeftRunning() throws {
        let wasRunning = try bash("source scripts/lib/env.sh; as_pg \"$(pg_bindir)/pg_ctl\" -D \"$(pg_datadir)/data\" status", fast: false).status == 0
        // As the scripts run it: `set -euo pipefail` (a failing command anywhere stops them).
        let query = "set -euo pipefail; source scripts/lib/env.sh; rewind_start_postgres >/dev/null 2>&1; psql -d postgres -qAtX -c 'SHOW fsync' && echo \"$PGPORT $(pg_datadir)\""
        let demo = try bash(query, fast: false)
        let tests = try bash(query, fast: true)
        defer {
            if !wasRunning { _ = try? bash("source scripts/lib/env.sh; rewind_stop_postgres", fast: false) }
        }
        XCTAssertEqual(demo.status, 0, demo.out)
        XCTAssertEqual(demo.out.split(separator: "\n").first, "on", "the demo's cluster: \(demo.out)")
        XCTAssertEqual(tests.out.split(separator: "\n").first, "off", "the tests' cluster: \(tests.out)")
        let demoWhere = String(demo.out.split(separator: "\n").last ?? ""), testsWhere = String(tests.out.split(separator: "\n").last ?? "")
        XCTAssertNotEqual(demoWhere, testsWhere, "two clusters, two ports")
        XCTAssertTrue(testsWhere.contains(".pg-test") || testsWhere.contains("-pg-test-"), testsWhere)
    }
}
