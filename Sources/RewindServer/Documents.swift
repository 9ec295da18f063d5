/// The documents loaded on this server, by id: a runtime is made on first
/// use and dropped when idle once more than `keepIdle` are loaded (read
/// from the log again when next needed). It owns that table; what loading
/// and unloading mean for prompts and keys is the server's
/// (`Server.document`, `Server.unload`).
final class Documents {
    private var byID: [String: DocumentRuntime] = [:]
    private let make: (String) -> DocumentRuntime
    /// Idle documents are kept while no more than this many are loaded.
    let keepIdle: Int

    init(keepIdle: Int = 256, make: @escaping (String) -> DocumentRuntime) {
        self.keepIdle = keepIdle
        self.make = make
    }

    /// The runtime of `id` if it is loaded.
    subscript(id: String) -> DocumentRuntime? { byID[id] }

    var all: [DocumentRuntime] { Array(byID.values) }

    /// The runtime of `id`, made now if it is not loaded.
    func runtime(_ id: String) -> DocumentRuntime {
        if let d = byID[id] { return d }
        let d = make(id)
        byID[id] = d
        return d
    }

    /// Whether `d` is the runtime loaded for its document (not one replaced since).
    func holds(_ d: DocumentRuntime) -> Bool { byID[d.id] === d }

    /// Drops `d` (false: it was not the one loaded).
    func remove(_ d: DocumentRuntime) -> Bool {
        guard holds(d) else { return false }
        byID[d.id] = nil
        return true
    }

    /// Whether an idle `d` should leave memory now.
    func shouldUnload(_ d: DocumentRuntime, now unloadNow: Bool) -> Bool {
        d.isIdle && (unloadNow || byID.count > keepIdle) && holds(d)
    }

    /// Some document still has commits being stored.
    var anyPending: Bool { byID.values.contains(where: \.hasPending) }
}
