import XCTest
@testable import RewindCore
import RewindTestSupport

/// Where new documents go, and which to move to even the shards out (SPEC section 17; issue 50).
final class PlacementTests: XCTestCase {
    func testTheLeastLoadedShardTakesANewDocumentTiesBrokenTheSameEverywhere() {
        let shards = [ShardLoad(id: "b", documents: 5, bytes: 100), ShardLoad(id: "a", documents: 9, bytes: 100),
                      ShardLoad(id: "c", documents: 1, bytes: 300), ShardLoad(id: "d", documents: 0, bytes: 0, accepting: false)]
        XCTAssertEqual(PlacementPolicy.leastLoaded.shard(for: "x", among: shards), "b", "fewest bytes, then fewest documents; a drained shard takes none")
        XCTAssertEqual(PlacementPolicy.leastLoaded.shard(for: "x", among: shards.shuffled()), "b", "whatever the order they are listed in")
        XCTAssertEqual(PlacementPolicy.leastLoaded.shard(for: "x", among: [ShardLoad(id: "z", bytes: 1), ShardLoad(id: "y", bytes: 1)]), "y", "then by id")
        XCTAssertNil(PlacementPolicy.leastLoaded.shard(for: "x", among: [ShardLoad(id: "d", accepting: false)]), "no shard accepts")
    }

    func testAPrefixKeepsOneCustomersDocumentsTogetherUnlessItsShardTakesNone() throws {
        let policy = try PlacementPolicy(parsing: """
            # Acme's documents on their own shard
            acme- -> s3
            beta-  ->  s2   # a comment
            least-loaded
            """)
        XCTAssertEqual(policy.rules, [.init(prefix: "acme-", shard: "s3"), .init(prefix: "beta-", shard: "s2")])
        let shards = [ShardLoad(id: "s1"), ShardLoad(id: "s2", bytes: 10), ShardLoad(id: "s3", bytes: 999)]
        XCTAssertEqual(policy.shard(for: "acme-plan", among: shards), "s3", "its rule, though s3 is the fullest")
        XCTAssertEqual(policy.shard(for: "beta-1", among: shards), "s2")
        XCTAssertEqual(policy.shard(for: "other", among: shards), "s1", "the rest: least loaded")
        var drained = shards
        drained[2].accepting = false
        XCTAssertEqual(policy.shard(for: "acme-plan", among: drained), "s1", "a rule's shard that takes none is passed over")
        XCTAssertEqual(try PlacementPolicy(parsing: policy.description), policy, "what it prints, it reads back")
        XCTAssertEqual(try PlacementPolicy(parsing: "least-loaded\n"), .leastLoaded)
        XCTAssertThrowsError(try PlacementPolicy(parsing: "acme- s3")) { XCTAssertEqual(($0 as? RewindError)?.code, .badRequest) }
        XCTAssertThrowsError(try PlacementPolicy(parsing: " -> s3"))
    }

    func testADrainEmptiesTheShardLargestFirstOntoTheLeastLoaded() {
        let shards = [ShardLoad(id: "a"), ShardLoad(id: "b"), ShardLoad(id: "gone", accepting: false)]
        let docs = [Rebalance.Placed(doc: "x", shard: "gone", bytes: 50), .init(doc: "y", shard: "gone", bytes: 30),
                    .init(doc: "z", shard: "gone", bytes: 20), .init(doc: "w", shard: "a", bytes: 10)]
        let plan = Rebalance.plan(shards: shards, documents: docs)
        XCTAssertEqual(plan.moves.map { "\($0.doc)→\($0.to)" }, ["x→b", "y→a", "z→a"])
        XCTAssertEqual(plan.bytesAfter, ["a": 60, "b": 50])
        XCTAssertEqual(plan.mean, 55)
    }

    /// Random shards and documents: the moves account for every byte, move
    /// each document once, and stop either within the tolerance or where no
    /// document of the fullest shard could narrow its gap to the emptiest.
    func testPlansKeepEveryByteMoveEachDocumentOnceAndStopOnlyWhereNothingHelps() {
        var rng = SeededRandom(seed: 42)
        for round in 0..<300 {
            let count = 2 + Int(rng.next() % 6)
            var shards = (0..<count).map { ShardLoad(id: "s\($0)") }
            if rng.next() % 4 == 0 { shards[0].accepting = false }
            var docs: [Rebalance.Placed] = []
            for n in 0..<Int(rng.next() % 60) {
                let bytes = Int64(1 + rng.next() % (rng.next() % 3 == 0 ? 1_000 : 50))
                docs.append(.init(doc: "d\(n)", shard: "s\(Int(rng.next() % UInt64(count)))", bytes: bytes))
            }
            let plan = Rebalance.plan(shards: shards, documents: docs, tolerance: 0.10)
            XCTAssertEqual(Set(plan.moves.map(\.doc)).count, plan.moves.count, "round \(round): a document moved twice")
            var where_ = Dictionary(uniqueKeysWithValues: docs.map { ($0.doc, $0.shard) })
            for m in plan.moves {
                XCTAssertEqual(where_[m.doc], m.from, "round \(round): moved from where it was")
                XCTAssertTrue(shards.first { $0.id == m.to }!.accepting, "round \(round): onto a shard that takes documents")
                where_[m.doc] = m.to
            }
            var load: [String: Int64] = [:]
            for d in docs { load[where_[d.doc]!, default: 0] += d.bytes }
            for s in shards where s.accepting { XCTAssertEqual(plan.bytesAfter[s.id] ?? 0, load[s.id] ?? 0, "round \(round): bytes on \(s.id)") }
            XCTAssertEqual(load[shards[0].id] ?? 0 > 0 && !shards[0].accepting, false, "round \(round): a drained shard is empty")
            guard plan.largestOverMean > 1.10 || plan.smallestOverMean < 0.90 else { continue }
            let open = shards.filter(\.accepting).map(\.id)
            let full = open.max { (load[$0] ?? 0, $1) < (load[$1] ?? 0, $0) }!
            let empty = open.min { (load[$0] ?? 0, $0) < (load[$1] ?? 0, $1) }!
            let moved = Set(plan.moves.map(\.doc))
            let movable = docs.filter { $0.shard == full && !moved.contains($0.doc) }
            XCTAssertTrue(movable.allSatisfy { $0.bytes >= (load[full] ?? 0) - (load[empty] ?? 0) },
                          "round \(round): stopped at \(plan.largestOverMean) though a document of \(full) would narrow the gap")
        }
    }

    func testASimulatedFleetIsUnevenAfterShardsAreAddedAndEvenAfterTheMoves() {
        var sim = PlacementSimulation()
        sim.documents = 60_000
        sim.shards = 6
        sim.added = 3
        sim.maxUnits = 2_560   // documents up to 10 MB: a shard here holds ~200 MB
        let r = sim.run()
        XCTAssertGreaterThan(r.largestBefore, 1.2, "shards added at 90 % are left nearly empty without moves")
        XCTAssertLessThan(r.smallestBefore, 0.5)
        XCTAssertLessThanOrEqual(r.largestAfter, 1.10, "the fullest within 10 % of the mean after the moves")
        XCTAssertGreaterThanOrEqual(r.smallestAfter, 0.90, "and the emptiest")
        XCTAssertGreaterThan(r.moves, 0)
        XCTAssertLessThan(Double(r.bytesMoved), Double(r.totalBytes) / 2, "not more than half of everything moves")
        XCTAssertEqual(r.shardsAfter.reduce(0, +), r.totalBytes, "no byte lost")
        let again = sim.run()
        XCTAssertEqual(again.shardsAfter, r.shardsAfter, "the same for the same seed")
    }
}
