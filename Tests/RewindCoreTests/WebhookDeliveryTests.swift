import XCTest
@testable import RewindCore

/// The pure parts of webhook delivery: Standard Webhooks signatures, the
/// window that keeps deliveries in order per document, and the retry schedule.
final class WebhookDeliveryTests: XCTestCase {
    /// The specification's own test vector (its reference libraries' tests).
    func testSignaturesMatchTheStandardWebhooksVector() throws {
        let key = try XCTUnwrap(StandardWebhooks.key(ofSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        XCTAssertEqual(StandardWebhooks.signature(key: key, id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
                                                  body: Array(#"{"test": 2432232314}"#.utf8)),
                       "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        XCTAssertEqual(StandardWebhooks.key(ofSecret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), key, "the prefix is optional")
        XCTAssertNil(StandardWebhooks.key(ofSecret: "whsec_not base64!"))
        let fresh = StandardWebhooks.newSecret()
        XCTAssertTrue(fresh.hasPrefix("whsec_"))
        XCTAssertEqual(StandardWebhooks.key(ofSecret: fresh)?.count, 32)
        XCTAssertNotEqual(fresh, StandardWebhooks.newSecret())
    }

    func testADocumentsEntriesWaitForItsEarlierOnesButOthersGoOn() {
        var w = DeliveryWindow<Int>(after: 10, capacity: 10)
        w.read([(11, "a", 0), (12, "a", 1), (13, "b", 2), (15, "a", 3)], through: 20)
        XCTAssertEqual(w.start(now: 0, maxInFlight: 8).map(\.position), [11, 13], "one post per document at a time")
        XCTAssertEqual(w.deliveredThrough, 10)
        w.failed(11, now: 0, delayMs: 100)
        XCTAssertEqual(w.start(now: 50, maxInFlight: 8).map(\.position), [], "a's next entries wait for the one failing")
        w.delivered(13)
        XCTAssertEqual(w.deliveredThrough, 10, "11 is not delivered: the position stays below it")
        XCTAssertEqual(w.nextRetry(after: 50), 100)
        XCTAssertEqual(w.start(now: 100, maxInFlight: 8).map(\.position), [11])
        w.delivered(11)
        XCTAssertEqual(w.deliveredThrough, 11)
        XCTAssertEqual(w.start(now: 100, maxInFlight: 8).map(\.position), [12])
        w.delivered(12)
        XCTAssertEqual(w.deliveredThrough, 14, "13 was delivered already: up to just before 15")
        XCTAssertEqual(w.start(now: 100, maxInFlight: 8).map(\.position), [15])
        w.delivered(15)
        XCTAssertEqual(w.deliveredThrough, 20, "all read, all delivered: up to where the read went")
        XCTAssertNil(w.failingSince)
    }

    /// Whatever the receiver answers, in whatever order the answers come: each
    /// document's entries are delivered in order, the position never passes an
    /// undelivered entry, and at most `maxInFlight` posts are under way.
    func testPropertyDeliveriesStayInOrderPerDocumentAndThePositionNeverSkips() {
        for seed in 0..<300 as Range<UInt64> {
            var rng = SeededRandom(seed: seed)
            let docs = ["a", "b", "c", "d"].prefix(Int.random(in: 1...4, using: &rng))
            let maxInFlight = Int.random(in: 1...5, using: &rng)
            var w = DeliveryWindow<Int>(after: 0, capacity: Int.random(in: 1...12, using: &rng))
            var next: Int64 = 1, now: UInt64 = 0
            var docOf: [Int64: String] = [:]
            var delivered: [Int64] = [], flying: [Int64] = []
            for _ in 0..<200 {
                now += UInt64.random(in: 0...30, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0 where w.room > 0:
                    var batch: [(position: Int64, doc: String, entry: Int)] = []
                    for _ in 0..<Int.random(in: 0...w.room, using: &rng) {
                        next += Int64.random(in: 1...3, using: &rng)
                        let d = docs.randomElement(using: &rng)!
                        docOf[next] = d
                        batch.append((next, d, 0))
                    }
                    w.read(batch, through: next + Int64.random(in: 0...2, using: &rng))
                    next = w.readThrough
                case 1:
                    flying += w.start(now: now, maxInFlight: maxInFlight).map(\.position)
                    XCTAssertLessThanOrEqual(flying.count, maxInFlight, "seed \(seed)")
                    XCTAssertEqual(Set(flying.map { docOf[$0]! }).count, flying.count, "seed \(seed): two posts of one document at once")
                case 2 where !flying.isEmpty:
                    let p = flying.remove(at: Int.random(in: 0..<flying.count, using: &rng))
                    if Bool.random(using: &rng) {
                        w.delivered(p)
                        delivered.append(p)
                    } else {
                        w.failed(p, now: now, delayMs: UInt64.random(in: 0...50, using: &rng))
                    }
                default: break
                }
                XCTAssertEqual(w.inFlight, w.slots.filter { $0.state == .inFlight }.count, "seed \(seed): the count of posts under way")
                XCTAssertEqual(w.failingSince, w.slots.compactMap(\.failingSince).min(), "seed \(seed)")
                let undelivered = docOf.keys.filter { !delivered.contains($0) }
                if let lowest = undelivered.min() { XCTAssertLessThan(w.deliveredThrough, lowest, "seed \(seed): the position passed \(lowest)") }
            }
            for d in docs {
                let mine = delivered.filter { docOf[$0] == d }
                XCTAssertEqual(mine, mine.sorted(), "seed \(seed): \(d) delivered out of order")
            }
        }
    }

    func testRetriesBackOffExponentiallyWithJitterUpToTheCap() {
        let s = RetrySchedule(baseMs: 2_000, capMs: 3_600_000)
        XCTAssertEqual(s.delayMs(attempt: 1, unit: 0), 1_000)
        XCTAssertEqual(s.delayMs(attempt: 1, unit: 1), 2_000)
        XCTAssertEqual(s.delayMs(attempt: 4, unit: 1), 16_000)
        XCTAssertEqual(s.delayMs(attempt: 4, unit: 0.5), 12_000)
        XCTAssertEqual(s.delayMs(attempt: 30, unit: 1), 3_600_000, "capped at an hour")
        XCTAssertEqual(s.delayMs(attempt: 500, unit: 0), 1_800_000, "no overflow however many attempts")
        // A day of failures: some thirty attempts, not thousands, not a handful.
        var t: UInt64 = 0, n = 0
        while t < 86_400_000 { n += 1; t += s.delayMs(attempt: n, unit: 0.5) }
        XCTAssertTrue((25...45).contains(n), "\(n) attempts in a day")
    }
}
