// libFuzzer target: a terminal's submit lines, decoded, validated, rebased and
// applied — the path a hostile client reaches with one line — then undone and
// redone. Built with RewindCore's sources in one module (`scripts/fuzz/run`).
//
// Input: NDJSON lines, each a request as a terminal sends it. A `submit` goes
// through `Request.decode` (a compact one's ops read without a tree, checked
// against `Op.parseList` of the same line) → `Op.parseList` / `Selection.parse` →
// `DocumentLedger.append` (check at base, rebase, apply); `undo` and `redo`
// through `DocumentLedger.revert`. Each input starts from the same ledger, with
// a short history (text typed, removed, a node deleted and made again under
// the same id), so any `base` from 0 to its head makes a late transaction.
//
// Any trap — an overflow, an index out of range, a force-unwrap — is a crash
// libFuzzer reports. Besides not trapping, each input checks two invariants:
// replaying the events it appended gives the live state, and every document
// stays within its limits.

let limits = Limits()

let template: DocumentLedger = {
    var l = DocumentLedger(doc: "d", limits: limits)
    func submit(_ tx: String, _ ops: [Op], user: Int64 = 2) {
        let s = DocumentLedger.Submission(tx: tx, base: l.version, ops: ops, action: nil, userID: user, userName: "u\(user)",
                                          client: "seed", eventID: "seed-\(tx)", time: 0)
        _ = try! l.append(s)
    }
    func text(_ id: Key, _ s: String, parent: Key = "root") -> Op {
        var spec = NodeSpec(id: id, kind: "text", frame: [0, 0, 100, 20])
        spec.text = Array(s.unicodeScalars)
        spec.focusable = true
        return .create(spec, parent: parent, index: 0)
    }
    var box = NodeSpec(id: "box", kind: "view", frame: [0, 0, 300, 300])
    box.undoScope = true
    submit("s1", [.create(box, parent: "root", index: 0), text("t", "hello"), text("u", "wörld 😀", parent: "box")])
    submit("s2", [.insert("t", pos: 5, text: Array(", there".unicodeScalars))])
    submit("s3", [.remove("t", pos: 0, len: 2)])
    submit("s4", [.delete("u")])
    submit("s5", [text("u", "a much longer text than before", parent: "box")])
    submit("s6", [.set("t", key: "color", value: "red"), .move("t", parent: "box", index: 0)], user: 1)
    submit("s7", [.insert("u", pos: 3, text: Array("XYZ".unicodeScalars))], user: 1)
    return l
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func rewindFuzzSubmit(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var decoder = FrameDecoder(maxFrameBytes: limits.maxFrameBytes)
    decoder.append(UnsafeRawBufferPointer(start: data, count: size))
    decoder.append([UInt8(ascii: "\n")])
    var ledger = template
    var appended: [Event] = []
    var n = 0
    while let frame = decoder.next(), n < 16 {
        n += 1
        guard case let .line(line) = frame else { continue }
        // As the server decodes: a compact submit has its ops read without a tree
        // (`Request.readSubmit`). Whatever it reads must be what the general way reads.
        let decoded = Request.decode(line, maxDepth: limits.maxJSONDepth, submitLimits: limits)
        if case let .success(fast) = decoded, let fastOps = fast.ops {
            guard case let .success(general) = Request.decode(line, maxDepth: limits.maxJSONDepth),
                  let ops = try? Op.parseList(general.body["ops"], limits: limits), ops == fastOps,
                  fast.id == general.id, fast.body == JSONObject(general.body.members.filter { $0.key != "ops" })
            else { fatalError("the submit reader and decode + parseList disagree") }
        }
        guard case let .success(r) = decoded else { continue }
        let user: Int64 = r.body["user"]?.intValue == 2 ? 2 : 1
        switch r.type {
        case "submit":
            guard let base = try? r.int("base"), let ops = r.ops ?? (try? Op.parseList(r.body["ops"], limits: limits)), !ops.isEmpty else { continue }
            let selection: Selection?
            do { selection = try Selection.parse(r.body["selection"]) } catch { continue }
            var s = DocumentLedger.Submission(tx: (try? r.string("tx")) ?? "tx\(n)", base: base, ops: ops,
                                              action: try? r.optionalString("action"), userID: user, userName: "u\(user)",
                                              client: "fuzz", eventID: "e\(n)", time: Int64(n) * 100, selection: selection)
            s.checksSelection = r.body["group"] == nil
            if !s.checksSelection { s.openGroup = "g" }  // a group's selection, given earlier, is clamped rather than checked
            if case let .appended(e)? = try? ledger.append(s) { appended.append(e) }
        case "undo", "redo":
            let policy: ConflictPolicy = r.body["on_conflict"] == "force" ? .force : .skip
            let req = DocumentLedger.RevertRequest(kind: r.type == "undo" ? .undo : .redo, userID: user, userName: "u\(user)", client: "fuzz",
                                                   scope: r.body["scope"]?.stringValue.map { Key($0) }, policy: policy, tx: nil,
                                                   eventID: "e\(n)", time: Int64(n) * 100)
            if let result = try? ledger.revert(req), let e = result.event { appended.append(e) }
        default:
            continue
        }
    }
    // Replay equals live.
    var replayed = template
    for e in appended {
        do { try replayed.replay(e) } catch { fatalError("replay of event \(e.version) failed: \(error.message)") }
    }
    if replayed.document != ledger.document { fatalError("replay differs from live") }
    if ledger.document.textScalars > limits.maxDocumentText { fatalError("document text past its limit") }
    return 0
}
