@testable import RewindCore
@_exported import RewindTestSupport

/// Random documents and ops that are valid against a given document.
struct OpGenerator {
    var rng: SeededRandom
    var counter = 0
    let alphabet: [Unicode.Scalar] = ["a", "b", "é", "e", "\u{301}", "中", "😀", " "]

    init(seed: UInt64) { rng = SeededRandom(seed: seed) }

    mutating func text(_ max: Int = 6) -> [Unicode.Scalar] {
        (0..<Int.random(in: 0...max, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
    }

    mutating func freshID() -> Key {
        counter += 1
        return Key("n\(counter)")
    }

    mutating func value() -> JSON {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: return .null
        case 1: return .int(Int64.random(in: Int64.min...Int64.max, using: &rng))
        case 2: return .double(Double.random(in: -1e6...1e6, using: &rng))
        case 3: return .string(String(String.UnicodeScalarView(text())))
        case 4: return .array([.bool(true), .int(1)])
        default: return ["k": .string("v")]
        }
    }

    /// One op that is valid against `doc` (or nil when none fits).
    mutating func op(on doc: Document) -> Op {
        let ids = doc.nodes.keys.sorted()
        let nonRoot = ids.filter { $0 != Document.rootID }
        let texts = ids.filter { doc[$0]!.kind == "text" }
        switch Int.random(in: 0..<7, using: &rng) {
        case 0, 1:
            let parent = ids.randomElement(using: &rng)!
            var spec = NodeSpec(id: freshID(), kind: Bool.random(using: &rng) ? "text" : "view", frame: [0, 0, 10, 10])
            spec.text = text()
            spec.focusable = Bool.random(using: &rng)
            if Bool.random(using: &rng), case let v = value(), !v.isNull { spec.props[Key("color")] = v }
            if Int.random(in: 0..<3, using: &rng) == 0 {
                var child = NodeSpec(id: freshID(), kind: "text", frame: [1, 2, 3, 4.5])
                child.text = text()
                spec.children = [child]
            }
            let count = doc[parent]!.children.count
            if doc.depth(of: parent) + spec.height > Limits().maxTreeDepth { return .set(parent, key: "x", value: value()) }
            return .create(spec, parent: parent, index: Int.random(in: 0...count + 1, using: &rng))
        case 2:
            guard let n = nonRoot.randomElement(using: &rng) else { return op(on: doc) }
            return .delete(n)
        case 3:
            let n = ids.randomElement(using: &rng)!
            let keys = ["color", "size", "frame", "clips", "focusable", "undoScope"]
            let key = keys.randomElement(using: &rng)!
            switch key {
            case "frame": return .set(n, key: key, value: [.int(1), .double(2.5), .int(3), .int(4)])
            case "clips", "focusable", "undoScope": return .set(n, key: key, value: .bool(Bool.random(using: &rng)))
            default: return .set(n, key: key, value: value())
            }
        case 4:
            guard let n = nonRoot.randomElement(using: &rng) else { return op(on: doc) }
            let targets = ids.filter { !doc.isInSubtree($0, of: n) }
            let p = targets.randomElement(using: &rng)!
            return .move(n, parent: p, index: Int.random(in: 0...doc[p]!.children.count + 1, using: &rng))
        default:
            guard let t = texts.randomElement(using: &rng) else { return op(on: doc) }
            let len = doc[t]!.text.count
            if Bool.random(using: &rng) || len == 0 {
                return .insert(t, pos: Int.random(in: 0...len, using: &rng), text: text())
            }
            let pos = Int.random(in: 0..<len, using: &rng)
            return .remove(t, pos: pos, len: Int.random(in: 0...(len - pos), using: &rng))
        }
    }

    /// A random document built by applying random ops.
    mutating func document(ops: Int) -> Document {
        var doc = Document()
        for _ in 0..<ops {
            let o = op(on: doc)
            _ = try? doc.apply(o, limits: Limits())
        }
        return doc
    }
}
