import XCTest
@testable import RewindServer

/// A server stopped while its webhook leases are being renewed stops: the last
/// records and the release wait for the renewal instead of sharing its
/// PostgreSQL connection from another thread (which left a stepped server's
/// stop waiting forever on a result the renewal had read).
final class WebhookShutdownTests: XCTestCase {
    func testAServerStoppedAsItsFirstLeaseRenewalRunsStops() throws {
        for _ in 0..<15 {
            let s = try SteppedServer()
            s.turn()  // the first renewal starts (its timer fires at once) and is under way on the pool
            let stopped = Date()
            s.stop()
            XCTAssertLessThan(Date().timeIntervalSince(stopped), 10)
        }
    }
}
