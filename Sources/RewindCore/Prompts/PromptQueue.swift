/// What one terminal is shown: per level, the prompt presented now and the
/// ones waiting behind it, in order (SPEC section 6). Presenting never
/// replaces what is shown and never drops a prompt; a level whose queue is
/// full refuses with `rate_limited`. Pure bookkeeping: the server pushes
/// `prompt` and `dismiss` from what these calls return.
public struct PromptQueue: Sendable, Equatable {
    /// Prompts that may wait per level (the one shown does not count).
    public let limit: Int
    private var shown: [Prompt.Level: String] = [:]
    private var waiting: [Prompt.Level: [String]] = [:]

    public init(limit: Int = 16) { self.limit = limit }

    /// Ids shown now, `alert` level first (it is on top).
    public var presented: [String] { Prompt.Level.allCases.reversed().compactMap { shown[$0] } }
    /// Every id shown or waiting.
    public var all: [String] { presented + Prompt.Level.allCases.reversed().flatMap { waiting[$0] ?? [] } }

    public func isPresented(_ id: String) -> Bool { shown.values.contains(id) }
    public func contains(_ id: String) -> Bool { isPresented(id) || waiting.values.contains { $0.contains(id) } }

    /// Adds `id` at `level`: true if it is shown at once, false if it waits.
    public mutating func present(_ id: String, at level: Prompt.Level) throws(RewindError) -> Bool {
        guard !contains(id) else { return isPresented(id) }
        if shown[level] == nil {
            shown[level] = id
            return true
        }
        guard waiting[level, default: []].count < limit else {
            throw RewindError(.rateLimited, "\(limit) prompts already wait at level \(level.rawValue) on this terminal; answer some first")
        }
        waiting[level, default: []].append(id)
        return false
    }

    /// Takes `id` away. Returns whether it was shown, and the prompt shown in
    /// its place (the next one waiting at that level), if any.
    @discardableResult
    public mutating func remove(_ id: String) -> (wasShown: Bool, next: String?) {
        for level in Prompt.Level.allCases {
            if shown[level] == id {
                var queue = waiting[level] ?? []
                let next = queue.isEmpty ? nil : queue.removeFirst()
                shown[level] = next
                waiting[level] = queue.isEmpty ? nil : queue
                return (true, next)
            }
            if let i = waiting[level]?.firstIndex(of: id) {
                waiting[level]!.remove(at: i)
                if waiting[level]!.isEmpty { waiting[level] = nil }
                return (false, nil)
            }
        }
        return (false, nil)
    }
}
