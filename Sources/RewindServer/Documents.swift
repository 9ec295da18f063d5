/// The documents loaded on this server, by id: a runtime is made on first
/// use and dropped when idle once more than `keepIdle` are loaded (read
/// from the log again when next needed). It owns that table; what
/// unloading means for prompts and keys is told to the server (`onUnloaded`).
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
        onMade(d)
        byID[id] = d
        return d
    }

    /// A runtime was made: the server wires what it tells (`Server.wire`).
    var onMade: (DocumentRuntime) -> Void = { _ in }

    /// Whether `d` is the runtime loaded for its document (not one replaced since).
    func holds(_ d: DocumentRuntime) -> Bool { byID[d.id] === d }

    /// Drops `d` (false: it was not the one loaded).
    func remove(_ d: DocumentRuntime) -> Bool {
        guard holds(d) else { return false }
        byID[d.id] = nil
        return true
    }

    /// `d` left memory (its prompts and its data key go with it).
    var onUnloaded: (DocumentRuntime) -> Void = { _ in }
    /// `mayBeIdle` ran: a shutdown waiting for commits may be able to finish.
    var onSettled: () -> Void = {}

    /// Whether an idle `d` should leave memory now.
    func shouldUnload(_ d: DocumentRuntime, now unloadNow: Bool) -> Bool {
        d.isIdle && (unloadNow || byID.count > keepIdle) && holds(d)
    }

    /// Keeps loaded documents while anyone uses them; past `keepIdle`
    /// loaded, idle ones are dropped and read from the log again when needed.
    /// `unloadNow`: drop it as soon as it is idle (deleted: its key leaves memory).
    func mayBeIdle(_ d: DocumentRuntime, unloadNow: Bool = false) {
        if shouldUnload(d, now: unloadNow) { unload(d) }
        onSettled()
    }

    /// `d` leaves memory now (a halted document; an idle one).
    func unload(_ d: DocumentRuntime) {
        guard remove(d) else { return }
        onUnloaded(d)
    }

    /// Some document still has commits being stored.
    var anyPending: Bool { byID.values.contains(where: \.hasPending) }
}
