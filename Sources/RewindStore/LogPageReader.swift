import Dispatch
import Synchronization
import RewindCore

/// Pages of one document's log, read, decoded and checked against the hash
/// chain on a second thread while the caller applies the pages before them
/// (`Replay`): reading, decoding and hashing were about half of a replay's
/// time, and the process no longer waits for PostgreSQL between pages.
///
/// Two pages at most are ahead of the caller. The reader owns `db` until
/// `finish()` returns; the caller must call it (it stops a reader that is
/// still ahead, and waits for it to be done with the connection).
final class LogPageReader: @unchecked Sendable {
    // The slots are handed over by the semaphores: one side touches a slot
    // only between its `wait` and the other side's `signal`.
    private var slots: [Result<[LogEntry], RewindError>?] = [nil, nil]
    private let filled = DispatchSemaphore(value: 0)
    private let free = DispatchSemaphore(value: 2)
    private let done = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private var taken = 0

    /// `checksChain`: false when the caller checks the hash chain itself
    /// (`Replay` does, on its own thread, to share the work between the two).
    /// `endsAtEmptyPage`: the log may end anywhere (`verify` reads past the
    /// head it was told of): an empty page is the last one, not an error.
    /// `cipher`: opens the sealed ops and inverse (nil: only plain text can be read).
    init(doc: String, db: Database, toSeq stop: Int64, cipher: DocumentCipher?, pageSize: Int = 5_000, checksChain: Bool = true,
         endsAtEmptyPage: Bool = false) {
        let box = DatabaseBox(db)
        DispatchQueue.global().async { [self] in
            defer { done.signal() }
            var seq: Int64 = 0, previous: [UInt8] = [], put = 0
            while seq < stop {
                free.wait()
                if stopping.load(ordering: .acquiring) { return }
                let page = Result { () throws(RewindError) -> [LogEntry] in
                    let entries = try LogRows.decode(doc: doc, try box.db.query(LogRows.range(doc: doc, afterSeq: seq, toSeq: stop, limit: pageSize)),
                                                     cipher: cipher)
                    if entries.isEmpty && endsAtEmptyPage { return [] }
                    guard !entries.isEmpty else { throw RewindError(.internal, "log of \(doc) ends at entry \(seq), its head says \(stop)") }
                    if checksChain {
                        for e in entries {
                            try DocumentLedger.checkChain(e, doc: doc, after: previous)
                            previous = e.hash
                        }
                    }
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

    /// The next page, checked (or why it could not be read).
    func next() throws(RewindError) -> [LogEntry] {
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
