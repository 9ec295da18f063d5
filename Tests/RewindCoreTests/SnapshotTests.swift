import XCTest
@testable import RewindCore

final class SnapshotTests: XCTestCase {
    /// A ledger restored from a snapshot (plus the tail of the log it asks
    /// for) behaves exactly like the live one: same state, same stacks, and
    /// the same results for every later edit, undo and redo.
    func testARestoredLedgerBehavesLikeTheLiveOne() throws {
        for seed in 300..<340 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var live = UndoSim()
            func step(_ sims: inout [UndoSim], _ gen: inout OpGenerator) {
                let user = Int64.random(in: 1...3, using: &gen.rng)
                let choice = Int.random(in: 0..<10, using: &gen.rng)
                let op = gen.op(on: sims[0].doc)
                let group = Int.random(in: 0..<4, using: &gen.rng) == 0 ? "g\(sims[0].counter)" : nil
                for i in sims.indices {
                    switch choice {
                    case 0..<6:
                        _ = try? sims[i].edit(user, [op], after: 300, group: group)
                        if let group { sims[i].mark(.close, user, group: group, action: "Grouped") }
                    case 6..<8: _ = try? sims[i].undo(user, policy: .force)
                    default: _ = try? sims[i].redo(user, policy: .skip)
                    }
                }
            }
            var one = [live]
            for _ in 0..<40 { step(&one, &gen) }
            live = one[0]
            let snapshot = live.ledger.snapshotJSON
            // What the server encodes: the copy with only what a snapshot needs.
            XCTAssertEqual(JSONWriter.string(live.ledger.forSnapshot.snapshotJSON), JSONWriter.string(snapshot), "seed \(seed)")
            // Through the text form, as stored.
            let stored = try JSONParser.parse(JSONWriter.string(snapshot), maxDepth: 64)
            let start = try DocumentLedger.tailStart(snapshot: stored, limits: Limits())
            // From event `start` to the entry the snapshot was taken at (the last), as the store reads it.
            let from = live.entries.firstIndex { if case let .event(ev) = $0 { return ev.version >= start }; return false } ?? live.entries.count - 1
            let tail = Array(live.entries[from...])
            var restored = live
            restored.ledger = try DocumentLedger(doc: "d", snapshot: stored, tail: tail)
            XCTAssertEqual(restored.doc, live.doc, "seed \(seed)")
            XCTAssertEqual(restored.history.stacks, live.history.stacks, "seed \(seed)")
            XCTAssertEqual(restored.history.groups, live.history.groups, "seed \(seed)")
            XCTAssertEqual(restored.history.markCount, live.history.markCount)
            live.ledger.compactHistory()
            var both = [live, restored]
            for _ in 0..<40 { step(&both, &gen) }
            XCTAssertEqual(both[1].doc, both[0].doc, "seed \(seed): diverged after the snapshot")
            XCTAssertEqual(both[1].history.stacks, both[0].history.stacks, "seed \(seed)")
            XCTAssertEqual(both[1].history.groups, both[0].history.groups, "seed \(seed)")
        }
    }

    /// A snapshot restored with a short tail (a cold open) holds only the
    /// newest events; an undo or redo of a group older than that reads the
    /// rest first (`olderLogNeeded`, `restoreOlderLog`, as the server does
    /// from the log) and must then come to exactly what the live ledger
    /// does: the same conflicts, the same question, the same ops, selection
    /// and document. Users 1 and 2 edit throughout; user 3 edits only at the
    /// start, so their groups are old by the time they undo.
    func testUndoAfterAColdOpenEqualsUndoOnTheLiveLedger() throws {
        var olderReads = 0, oldConflicts = 0
        for seed in 500..<560 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var sims = [UndoSim()]
            func step(_ sims: inout [UndoSim], _ gen: inout OpGenerator, users: ClosedRange<Int64>, edits: Int) throws {
                let user = Int64.random(in: users, using: &gen.rng)
                let choice = Int.random(in: 0..<10, using: &gen.rng)
                // Edits aimed at few nodes and keys, so that later edits by others conflict with old groups.
                var op = gen.op(on: sims[0].doc)
                if case .set = op, Bool.random(using: &gen.rng) {
                    let nodes = sims[0].doc.nodes.keys.sorted()
                    op = .set(nodes[Int.random(in: 0..<min(3, nodes.count), using: &gen.rng)], key: "k", value: .int(Int64(sims[0].counter)))
                }
                let policy = ConflictPolicy.allCases.randomElement(using: &gen.rng)!
                if choice < edits {
                    for i in sims.indices { _ = try? sims[i].edit(user, [op], after: 300) }
                    return
                }
                let kind: EventKind = choice < 8 ? .undo : .redo
                if sims.count == 2, let from = sims[1].ledger.olderLogNeeded(for: .init(kind: kind, userID: user, userName: "", client: "", scope: nil,
                                                                                          policy: policy, tx: nil, eventID: "", time: 0)) {
                    let older = sims[0].entries.compactMap { entry -> Event? in
                        guard case let .event(e) = entry, e.version >= from, e.version < sims[1].history.logBase else { return nil }
                        return e
                    }
                    try sims[1].ledger.restoreOlderLog(older)
                    XCTAssertNil(sims[1].ledger.olderLogNeeded(for: .init(kind: kind, userID: user, userName: "", client: "", scope: nil,
                                                                          policy: policy, tx: nil, eventID: "", time: 0)))
                    olderReads += 1
                }
                var outcomes: [RevertSeen] = []
                for i in sims.indices {
                    do {
                        switch try sims[i].revertOrAsk(kind, user, policy: policy) {
                        case let .reverted(r):
                            if user == 3 && !r.conflicts.isEmpty { oldConflicts += 1 }
                            outcomes.append(.reverted(ops: r.event?.ops ?? [], inverse: r.event?.inverse ?? [], selection: r.selection,
                                                      conflicts: r.conflicts, skipped: r.skipped))
                        case let .needsAnswer(q):
                            if user == 3 { oldConflicts += 1 }
                            outcomes.append(.asked(group: q.group, action: q.action, conflicts: q.conflicts))
                        }
                    } catch {
                        outcomes.append(.failed(error as! RewindError))
                    }
                }
                if outcomes.count == 2 { XCTAssertEqual(outcomes[1], outcomes[0], "seed \(seed): \(kind) by \(user)") }
            }
            for _ in 0..<6 { try step(&sims, &gen, users: 3...3, edits: 10) }
            for _ in 0..<50 { try step(&sims, &gen, users: 1...2, edits: 7) }
            let live = sims[0]
            let stored = try JSONParser.parse(JSONWriter.string(live.ledger.snapshotJSON), maxDepth: 64)
            var limits = Limits()
            limits.maxRebaseDistance = 8
            let start = try DocumentLedger.tailStart(snapshot: stored, limits: limits)
            XCTAssertEqual(start, live.ledger.version - 7, "seed \(seed): the tail is the rebase window, not the oldest group")
            let from = live.entries.firstIndex { if case let .event(ev) = $0 { return ev.version >= start }; return false }!
            var restored = live
            restored.ledger = try DocumentLedger(doc: "d", snapshot: stored, tail: Array(live.entries[from...]), limits: limits)
            XCTAssertEqual(restored.history.stacks, live.history.stacks, "seed \(seed)")
            XCTAssertEqual(restored.history.groups, live.history.groups, "seed \(seed)")
            sims.append(restored)
            for _ in 0..<10 { try step(&sims, &gen, users: 1...2, edits: 5) }
            for _ in 0..<12 { try step(&sims, &gen, users: 1...3, edits: 2) }
            XCTAssertEqual(sims[1].doc, sims[0].doc, "seed \(seed): diverged after the cold open")
            XCTAssertEqual(sims[1].history.stacks, sims[0].history.stacks, "seed \(seed)")
            XCTAssertEqual(sims[1].history.groups, sims[0].history.groups, "seed \(seed)")
            // Read back to the first event, the restored history indexes every node as the live one did
            // (events held before the older ones came back that reverted them are indexed again).
            let all = sims[0].entries.compactMap { if case let .event(e) = $0, e.version < sims[1].history.logBase { return e }; return nil }
            try sims[1].ledger.restoreOlderLog(all)
            XCTAssertEqual(sims[1].history.logBase, 1)
            XCTAssertEqual(sims[1].history.log.map(\.version), sims[0].history.log.map(\.version), "seed \(seed)")
            XCTAssertEqual(sims[1].history.touches, sims[0].history.touches, "seed \(seed): the touch index differs from the live one")
        }
        // The properties above were exercised, not skipped: old groups were read back, and some conflicted.
        XCTAssertGreaterThan(olderReads, 60)
        XCTAssertGreaterThan(oldConflicts, 10)
        print("cold-open undo: \(olderReads) older-log reads, \(oldConflicts) conflicting reverts of old groups")
    }

    /// Two undos of old groups read the log back at once (two terminals):
    /// their reads overlap and end in either order. Whatever the order, the
    /// history holds each event once and indexes it as one read would have.
    func testOverlappingOlderLogReadsEndInEitherOrder() throws {
        var gen = OpGenerator(seed: 77)
        var sim = UndoSim()
        for i in 0..<60 {
            let user = Int64(1 + i % 3)
            if i % 7 == 6 { _ = try? sim.undo(user, policy: .force) } else { _ = try? sim.edit(user, [gen.op(on: sim.doc)], after: 300) }
        }
        let stored = try JSONParser.parse(JSONWriter.string(sim.ledger.snapshotJSON), maxDepth: 64)
        var limits = Limits()
        limits.maxRebaseDistance = 10
        let start = try DocumentLedger.tailStart(snapshot: stored, limits: limits)
        let from = sim.entries.firstIndex { if case let .event(e) = $0 { return e.version >= start }; return false }!
        let restored = try DocumentLedger(doc: "d", snapshot: stored, tail: Array(sim.entries[from...]), limits: limits)
        let base = restored.history.logBase
        XCTAssertGreaterThan(base, 20)
        func events(_ range: ClosedRange<Int64>) -> [Event] {
            sim.entries.compactMap { if case let .event(e) = $0, range.contains(e.version) { return e }; return nil }
        }
        var once = restored, wideFirst = restored, narrowFirst = restored
        try once.restoreOlderLog(events(1...(base - 1)))
        try wideFirst.restoreOlderLog(events(1...(base - 1)))
        try wideFirst.restoreOlderLog(events(12...(base - 1)))
        try narrowFirst.restoreOlderLog(events(12...(base - 1)))
        try narrowFirst.restoreOlderLog(events(1...(base - 1)))
        // Made ready once for both of a document's ledgers, off the loop, as the server does: the same.
        // One ledger had a narrower read land meanwhile, so the part made for `base` is built again for it.
        let ready = UndoHistory.OlderLog(events(1...(base - 1)), levels: restored.history.levels, below: base)
        var prepared = restored, preparedAfterNarrow = restored
        try prepared.restoreOlderLog(ready)
        try preparedAfterNarrow.restoreOlderLog(events(12...(base - 1)))
        try preparedAfterNarrow.restoreOlderLog(ready)
        for other in [wideFirst, narrowFirst, prepared, preparedAfterNarrow] {
            XCTAssertEqual(other.history.logBase, 1)
            XCTAssertEqual(other.history.log.map(\.version), once.history.log.map(\.version))
            XCTAssertEqual(other.history.touches, once.history.touches)
        }
        XCTAssertEqual(once.history.log.map(\.version), Array(1...sim.ledger.version))
        // A read that does not reach just below what is held is refused, not put in with a hole.
        var gap = restored
        XCTAssertThrowsError(try gap.restoreOlderLog(events(1...(base - 3))))
    }

    /// What one undo or redo came to, compared whole (props are dictionaries: their printed order differs between copies).
    enum RevertSeen: Equatable {
        case reverted(ops: [Op], inverse: [Op], selection: Selection?, conflicts: [Conflict], skipped: [Conflict])
        case asked(group: String, action: String?, conflicts: [Conflict])
        case failed(RewindError)
    }

    /// With few levels, compaction forgets most of the log, and the compacted
    /// ledger still answers every undo and redo like one that kept it all.
    func testCompactionKeepsMemoryToWhatTheStacksReach() throws {
        for seed in 400..<420 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var sims = [UndoSim(levels: 3), UndoSim(levels: 3)]
            for step in 0..<300 {
                let user = Int64.random(in: 1...2, using: &gen.rng)
                let choice = Int.random(in: 0..<10, using: &gen.rng)
                var op = gen.op(on: sims[0].doc)
                // One scope: old groups kept in other scopes' stacks would (rightly) hold the floor down.
                if case .set(_, "undoScope", _) = op { op = .set(Document.rootID, key: "k", value: 1) }
                for i in sims.indices {
                    switch choice {
                    case 0..<7: _ = try? sims[i].edit(user, [op], after: 300)
                    case 7..<9: _ = try? sims[i].undo(user, policy: .force)
                    default: _ = try? sims[i].redo(user, policy: .force)
                    }
                }
                if step % 10 == 0 { sims[1].ledger.compactHistory() }
                XCTAssertEqual(sims[1].doc, sims[0].doc, "seed \(seed) step \(step)")
            }
            XCTAssertEqual(sims[1].history.stacks, sims[0].history.stacks, "seed \(seed)")
            XCTAssertEqual(sims[1].history.groups, sims[0].history.groups, "seed \(seed)")
            XCTAssertLessThan(sims[1].history.log.count, sims[0].history.log.count / 2, "seed \(seed): compaction kept most of the log")
        }
    }

    func testADocumentRoundTripsThroughItsWireForm() throws {
        var gen = OpGenerator(seed: 7)
        let doc = gen.document(ops: 200)
        XCTAssertEqual(try Document(json: JSONParser.parse(JSONWriter.string(doc.json), maxDepth: 64)), doc)
    }
}
