/// A node id or prop key, compared and hashed by its exact UTF-8 bytes.
///
/// Swift's `String` equality is canonical equivalence, so `"é"` and `"e\u{301}"`
/// would collide in a dictionary while PostgreSQL keeps them apart; replay
/// would then diverge from live. Keys here are byte-exact.
public struct Key: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let string: String

    public init(_ string: String) { self.string = string }
    public init(stringLiteral value: String) { self.string = value }

    public static func == (a: Key, b: Key) -> Bool { Bytes.equal(a.string, b.string) }

    public func hash(into h: inout Hasher) {
        Bytes.hash(string, into: &h)
        h.combine(0xFF as UInt8)  // never a UTF-8 byte: terminates the key
    }

    /// Byte order: deterministic output of maps, whatever the process's hash seed.
    public static func < (a: Key, b: Key) -> Bool { a.string.utf8.lexicographicallyPrecedes(b.string.utf8) }

    public var description: String { string }
}
