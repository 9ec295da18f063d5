@testable import RewindCore
@testable import RewindServer
import XCTest

/// Event ids: version 4 UUIDs from libcrypto's generator, drawn from a pool
/// (`RandomBytes`). Each is well formed, none repeats, and every random
/// digit takes many values (a pool handing out the same or zeroed bytes would show).
final class EventIDTests: XCTestCase {
    func testIdsAreDistinctVersion4UUIDsWithRandomDigits() throws {
        let shape = try Regex("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        var seen = Set<String>()
        var valuesAt = [Set<UInt8>](repeating: [], count: 36)
        for _ in 0..<5_000 {  // 80,000 bytes: the 4 KiB pool refilled many times, ids straddling refills
            let id = UUID.random()
            XCTAssertNotNil(id.wholeMatch(of: shape), id)
            XCTAssertTrue(seen.insert(id).inserted, "\(id) came twice")
            for (i, c) in id.utf8.enumerated() { valuesAt[i].insert(c) }
        }
        for i in 0..<36 where ![8, 13, 14, 18, 19, 23].contains(i) {
            XCTAssertEqual(valuesAt[i].count, 16, "hex digit \(i) should take all 16 values over 5,000 ids")
        }
    }

    /// A draw larger than the pool, and draws across its refill, are all filled.
    func testDrawsLargerThanThePoolAreFilled() {
        var big = [UInt8](repeating: 0, count: 10_000)
        big.withUnsafeMutableBytes { RandomBytes.fill($0) }
        XCTAssertLessThan(big.filter { $0 == 0 }.count, 100, "about 39 zero bytes expected in 10,000")
        XCTAssertGreaterThan(Set(big.suffix(2_000)).count, 200)
    }
}
