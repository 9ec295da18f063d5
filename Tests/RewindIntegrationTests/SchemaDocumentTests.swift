import Foundation
import RewindStore
import XCTest

/// `schema/current.sql` is the schema every migration produces, readable in
/// one place: proved equal to `pg_dump --schema-only` of a database migrated
/// from empty (comments, blank lines and pg_dump's session settings aside).
final class SchemaDocumentTests: XCTestCase {
    static func statements(_ sql: String) -> [String] {
        sql.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { line in
            !line.isEmpty && !line.hasPrefix("--") && !line.hasPrefix("SET ") && !line.hasPrefix("SELECT pg_catalog.set_config")
                && !line.hasPrefix("\\restrict ") && !line.hasPrefix("\\unrestrict ")
        }
    }

    func testCurrentSQLIsWhatTheMigrationsProduce() throws {
        let db = try TestDatabase()
        let dump = try runProgram("/usr/bin/env", ["pg_dump", "--schema-only", "--no-owner", "--no-privileges", "-d", db.name])
        XCTAssertEqual(dump.status, 0, dump.err)
        let written = try String(contentsOfFile: TestDatabase.repositoryRoot + "/schema/current.sql", encoding: .utf8)
        let (expected, found) = (Self.statements(dump.out), Self.statements(written))
        XCTAssertGreaterThan(expected.count, 100, "pg_dump printed the schema")
        guard expected != found else { return }
        let diff = expected.difference(from: found)
        XCTFail("schema/current.sql differs from the migrations' schema (regenerate it: scripts/schema-dump, see its header):\n"
                + diff.prefix(20).map { change -> String in
                    switch change {
                    case let .insert(_, line, _): return "+ " + line
                    case let .remove(_, line, _): return "- " + line
                    }
                }.joined(separator: "\n"))
    }
}
