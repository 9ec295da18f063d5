// What binding an entry's sealed text to its place costs (issue 44): sealing
// and opening one event's ops and inverse with the bound authenticated data
// (document, seq, entry id: `DocumentCipher.sealEntry`) beside the unbound
// form of releases before (the document only), in the same process, on the
// same payloads, in alternating rounds so that drift and frequency changes
// fall on both alike. Prints ns per call (median of the rounds) and the ratio.
//
//   swift build -c release --product seal-bench
//   .build/release/seal-bench [--rounds R] [--n N]         both forms, side by side
//   .build/release/seal-bench --only MODE --n N             one path only (for callgrind:
//       MODE is seal-bound, seal-unbound, open-bound or open-unbound)
import Foundation
@_spi(Unbound) import RewindCore

/// Everything in one function: top-level variables would be the main actor's.
func sealBench() {

    var rounds = 15, n = 20_000
    var only: String?
    var args = CommandLine.arguments.dropFirst()
    while let a = args.popFirst() {
        switch a {
        case "--rounds": rounds = Int(args.popFirst() ?? "") ?? rounds
        case "--n": n = Int(args.popFirst() ?? "") ?? n
        case "--only": only = args.popFirst()
        default: FileHandle.standardError.write(Data("usage: seal-bench [--rounds R] [--n N] [--only MODE]\n".utf8)); exit(2)
        }
    }

    let cipher = DocumentCipher(doc: "bench-document-01", keyID: DocumentCipher.newKeyID(), key: DocumentCipher.newKey())
    let id = "3f2b8c1e-9a47-4d2e-b6c1-0e5f7a9d2c41", seq: Int64 = 123_456
    /// Event-sized payloads: one typed character (the commonest event), and a paste of ~1 KB.
    let payloads: [(name: String, ops: String, inverse: String)] = [
        ("typed char", #"[{"op":"insert","node":"n12","pos":41,"text":"e"}]"#, #"[{"op":"delete","node":"n12","pos":41,"count":1}]"#),
        ("1 KB paste", #"[{"op":"insert","node":"n12","pos":41,"text":""# + String(repeating: "lorem ipsum ", count: 80) + #""}]"#,
         #"[{"op":"delete","node":"n12","pos":41,"count":960}]"#),
    ]

    /// Nanoseconds per call of `body` over `n` calls.
    func timed(_ n: Int, _ body: () -> Void) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<n { body() }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(n)
    }

    var sink = 0
    func sealBound(_ p: (name: String, ops: String, inverse: String)) { sink &+= cipher.sealEntry(ops: p.ops, inverse: p.inverse, seq: seq, id: id).utf8.count }
    func sealUnbound(_ p: (name: String, ops: String, inverse: String)) { sink &+= cipher.sealEntryUnbound(ops: p.ops, inverse: p.inverse).utf8.count }

    if let only {
        let p = payloads[0]
        let bound = cipher.sealEntry(ops: p.ops, inverse: p.inverse, seq: seq, id: id), unbound = cipher.sealEntryUnbound(ops: p.ops, inverse: p.inverse)
        for _ in 0..<n {
            switch only {
            case "seal-bound": sealBound(p)
            case "seal-unbound": sealUnbound(p)
            case "open-bound": sink &+= (try! cipher.openEntryBytes(bound, seq: seq, id: id)).newline
            case "open-unbound": sink &+= (try! cipher.openEntryBytes(unbound, seq: seq, id: id)).newline
            default: FileHandle.standardError.write(Data("unknown mode \(only)\n".utf8)); exit(2)
            }
        }
        print("\(only): \(n) calls (\(sink))")
        exit(0)
    }

    func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
    print("seal-bench: \(rounds) rounds of \(n) calls per path, alternating; median ns per call")
    for p in payloads {
        let bound = cipher.sealEntry(ops: p.ops, inverse: p.inverse, seq: seq, id: id), unbound = cipher.sealEntryUnbound(ops: p.ops, inverse: p.inverse)
        var t: [String: [Double]] = [:]
        for r in 0..<(rounds + 1) {
            // Each round runs the four paths, the order flipped every other round; round 0 warms up and is dropped.
            let paths: [(String, () -> Void)] = [
                ("seal unbound", { sealUnbound(p) }), ("seal bound", { sealBound(p) }),
                ("open unbound", { sink &+= (try! cipher.openEntryBytes(unbound, seq: seq, id: id)).newline }),
                ("open bound", { sink &+= (try! cipher.openEntryBytes(bound, seq: seq, id: id)).newline }),
            ]
            for (name, body) in r % 2 == 0 ? paths : paths.reversed() {
                let ns = timed(n, body)
                if r > 0 { t[name, default: []].append(ns) }
            }
        }
        let plain = p.ops.utf8.count + 1 + p.inverse.utf8.count
        for op in ["seal", "open"] {
            let u = median(t["\(op) unbound"]!), b = median(t["\(op) bound"]!)
            print(String(format: "%@ (%d plain bytes), %@: unbound %.0f ns, bound %.0f ns, bound/unbound %.3f (%+.0f ns)",
                         p.name, plain, op, u, b, b / u, b - u))
        }
    }
    if sink == 42 { print("") }  // keeps the results alive
}

sealBench()
