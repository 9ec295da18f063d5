import Dispatch
import Synchronization
import RewindCore

/// Pages of one document's log, read and decoded on a second thread while
/// the caller checks the hash chain of the pages before them and applies
/// them (`Replay`, `Verify`): reading and decoding are about half of the
/// work, and the process no longer waits for PostgreSQL between pages.
///
/// Two pages at most are ahead of the caller. The reader owns `db` until
/// `finish()` returns; the caller must call it (it stops a reader that is
/// still ahead, and waits for it to be done with the connection).
final class LogPageReader: @unchecked Sendable {
    // The slots are handed over by the semaphores: one side touches a slot
    // only between its `wait` and the other side's `signal`.
    private var slots: [Result<[LogEntry], RewindError>?] = [nil, nil]
    private let filled = DispatchSemaphore(value: 0)
    /// Made at 0 and signalled twice: libdispatch traps when a semaphore is
    /// freed below the value it was made with, which a reader stopped early
    /// (a broken chain, `finish()` mid-way) leaves it at.
    private let free = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private var taken = 0
    /// Pages the caller is done with, freed on the reader's thread: memory
    /// allocated on one thread and freed on another makes both wait on
    /// malloc's arena lock (perf: ~15 % of a replay's samples).
    private let used = Mutex<[[LogEntry]]>([])

    /// `endsAtEmptyPage`: the log may end anywhere (`verify` reads past the
    /// head it was told of): an empty page is the last one, not an error.
    /// `cipher`: opens the sealed ops and inverse (nil: only plain text can be read).
    init(doc: String, db: Database, toSeq stop: Int64, cipher: DocumentCipher?, pageSize: Int = 5_000, endsAtEmptyPage: Bool = false) {
        let box = DatabaseBox(db)
        free.signal()
        free.signal()
        DispatchQueue.global().async { [self] in
            defer { done.signal() }
            var put = 0
            // The next page is asked for before this one is decoded (its first
            // seq is this page's last): PostgreSQL reads and sends it meanwhile.
            var asked = false
            defer { if asked { _ = try? box.db.receive() } }
            func ask(after seq: Int64) throws(RewindError) {
                try box.db.send(LogRows.range(doc: doc, afterSeq: seq, toSeq: stop, limit: pageSize))
                asked = true
            }
            func receive() throws(RewindError) -> Rows {
                asked = false
                return try box.db.receive()
            }
            var seq: Int64 = 0
            while seq < stop {
                free.wait()
                if stopping.load(ordering: .acquiring) { return }
                used.withLock { $0.removeAll() }
                let page = Result { () throws(RewindError) -> [LogEntry] in
                    let rows: Rows
                    if asked { rows = try receive() } else {
                        try ask(after: seq)
                        rows = try receive()
                    }
                    if let last = rows.values.last?[0].flatMap({ Int64($0) }), last < stop { try ask(after: last) }
                    let entries = try LogRows.decode(doc: doc, rows, cipher: cipher)
                    if entries.isEmpty && endsAtEmptyPage { return [] }
                    guard !entries.isEmpty else { throw RewindError(.internal, "log of \(doc) ends at entry \(seq), its head says \(stop)") }
                    return entries
                }
                slots[put % 2] = page
                put += 1
                filled.signal()
                guard case let .success(entries) = page, !entries.isEmpty else { return }
                seq = entries.last!.seq
            }
        }
    }

    /// The next page, checked (or why it could not be read). `done`: the
    /// page before, applied and no longer needed (freed on the reader's thread).
    func next(done page: consuming [LogEntry]? = nil) throws(RewindError) -> [LogEntry] {
        if let page { used.withLock { $0.append(page) } }
        filled.wait()
        let page = slots[taken % 2]!
        slots[taken % 2] = nil
        taken += 1
        free.signal()
        return try page.get()
    }

    /// Stops the reader if it is still ahead and waits until it has let go of the connection.
    func finish() {
        stopping.store(true, ordering: .releasing)
        free.signal()  // a reader waiting for a free slot sees the flag
        done.wait()
    }

    private struct DatabaseBox: @unchecked Sendable {
        let db: Database
        init(_ db: Database) { self.db = db }
    }
}
