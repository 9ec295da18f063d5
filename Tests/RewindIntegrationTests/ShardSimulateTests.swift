import XCTest

/// `rewind admin shard simulate` as an operator runs it (docs/scaling.md): no database, a report, and exit 1
/// when no move can bring the fullest shard within the tolerance.
final class ShardSimulateTests: XCTestCase {
    func testASimulationReportsTheShardsBeforeAndAfterTheMovesAndFailsWhereNoMoveHelps() throws {
        let even = try runRewind(["admin", "shard", "simulate", "--documents", "50000", "--shards", "4", "--added", "2", "--max-document-mb", "10"])
        XCTAssertEqual(even.status, 0, even.err)
        XCTAssertTrue(even.out.hasPrefix("conditions: documents=50000 shards=4+2 added-at=0.9"), even.out)
        let after = try XCTUnwrap(even.out.split(separator: "\n").first { $0.hasPrefix("after ") }, even.out)
        XCTAssertTrue(after.contains("fullest 1.0"), "within 10 %: \(after)")
        XCTAssertEqual(even.out.split(separator: "\n").filter { $0.hasPrefix("s") && $0.dropFirst().first?.isNumber == true }.count, 6, "a row a shard")
        let same = try runRewind(["admin", "shard", "simulate", "--documents", "50000", "--shards", "4", "--added", "2", "--max-document-mb", "10"])
        XCTAssertEqual(same.out.split(separator: "\n").dropLast(), even.out.split(separator: "\n").dropLast(), "the same seed, the same run")

        let lumpy = try runRewind(["admin", "shard", "simulate", "--documents", "2000", "--exponent", "1.5"])
        XCTAssertEqual(lumpy.status, 1, lumpy.out)
        XCTAssertTrue(lumpy.err.contains("documents are too large for the room left"), lumpy.err)
        let bad = try runRewind(["admin", "shard", "simulate", "--exponent", "1"])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.err.contains("--exponent above 1"), bad.err)
    }
}
