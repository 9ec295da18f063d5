import ArgumentParser
import RewindCore

extension Admin {
    /// Documents placed on several PostgreSQL clusters (SPEC section 17; docs/scaling.md):
    /// the catalog's shards and placement policy, moves, drains, rebalancing, and a simulation.
    struct Shard: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Documents on several PostgreSQL clusters: shards, placement, moves, drains, rebalancing.",
            subcommands: [Add.self, List.self, State.self, Policy.self, Move.self, Drain.self, Rebalance.self, Simulate.self])

        struct Simulate: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Place many documents on shards, add shards late, and plan the moves that even them out.",
                discussion: """
                    Documents are created one after another and placed on the least loaded shard
                    (by bytes); each holds a size drawn from a Zipf law (the chance of k units of
                    --unit-kb is proportional to k^-exponent, up to --max-document-mb). Once
                    --added-at of them exist, --added empty shards join. Printed: each shard's bytes
                    over the mean before and after the rebalance's moves, how many moves and bytes,
                    and how long planning took. Nothing is read or written: no database is needed.
                    """)
            @Option(help: "Documents (default 10,000,000).") var documents = 10_000_000
            @Option(help: "Shards at the start.") var shards = 16
            @Option(help: "Shards added empty late in the run.") var added = 8
            @Option(help: "When they are added: the fraction of the documents made by then.") var addedAt = 0.9
            @Option(help: "The Zipf law's exponent (larger: fewer large documents).") var exponent = 2.0
            @Option(help: "A size unit, in KiB.") var unitKb = 4
            @Option(help: "The largest document, in MiB.") var maxDocumentMb = 100
            @Option(help: "How far over the mean the fullest shard may stay (0.10: 10 %).") var tolerance = 0.10
            @Option(help: "The random seed (the same seed, the same run).") var seed: UInt64 = 1

            func validate() throws {
                guard documents > 0, shards > 0, added >= 0, (0...1).contains(addedAt), exponent > 1, unitKb > 0,
                      maxDocumentMb * 1024 >= unitKb, tolerance > 0 else {
                    throw ValidationError("documents and shards above 0, added 0 or more, --added-at 0 to 1, --exponent above 1, a document at least one unit, --tolerance above 0")
                }
            }

            func run() throws {
                var sim = PlacementSimulation()
                sim.documents = documents
                sim.shards = shards
                sim.added = added
                sim.addedAt = addedAt
                sim.exponent = exponent
                sim.unitBytes = Int64(unitKb) * 1024
                sim.maxUnits = maxDocumentMb * 1024 / unitKb
                sim.tolerance = tolerance
                sim.seed = seed
                let started = Progress.now()
                let r = sim.run()
                let seconds = Progress.now() - started
                let gib = { (b: Double) in fixed(b / Double(1 << 30), 2) + " GiB" }
                print("conditions: documents=\(documents) shards=\(shards)+\(added) added-at=\(addedAt) zipf-exponent=\(exponent) unit=\(unitKb)KiB max-document=\(maxDocumentMb)MiB tolerance=\(tolerance) seed=\(seed)")
                print("total \(gib(Double(r.totalBytes))), mean a shard \(gib(r.mean)), largest document \(gib(Double(r.largestDocument)))")
                print("before the moves: fullest \(fixed(r.largestBefore, 3)) × the mean, emptiest \(fixed(r.smallestBefore, 3))")
                let share = 100 * Double(r.bytesMoved) / Double(max(r.totalBytes, 1))
                print("after \(r.moves) moves (\(gib(Double(r.bytesMoved))), \(fixed(share, 1)) % of all bytes): fullest \(fixed(r.largestAfter, 3)) × the mean, emptiest \(fixed(r.smallestAfter, 3))")
                printTable([["shard", "before/mean", "after/mean"]] + zip(r.shardsBefore, r.shardsAfter).enumerated().map { i, p in
                    ["s\(i + 1)", fixed(Double(p.0) / r.mean, 3), fixed(Double(p.1) / r.mean, 3)]
                })
                print("simulated and planned in \(fixed(seconds, 1)) s")
                if r.largestAfter > 1 + tolerance {
                    throw Failure(RewindError(.conflict, "the fullest shard stays \(fixed(r.largestAfter, 3)) × the mean: its documents are too large for the room left on the others"))
                }
            }
        }
    }
}

/// `x` with `digits` decimals (no Foundation here).
func fixed(_ x: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let n = Int64((abs(x) * scale).rounded())
    let whole = n / Int64(scale), frac = n % Int64(scale)
    let f = String(frac)
    return (x < 0 && n != 0 ? "-" : "") + "\(whole)" + (digits > 0 ? "." + String(repeating: "0", count: digits - f.count) + f : "")
}
