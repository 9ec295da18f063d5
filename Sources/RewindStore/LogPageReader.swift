import Dispatch
import Synchronization
import RewindCore

/// Pages of one document's log, read and decoded on other threads while the
/// caller checks the hash chain of the pages before them and applies them
/// (`Replay`, `Verify`): reading and decoding are more than half of the
/// work, so they are shared by `workers` threads, each on a connection of
/// its own, page k read by worker k mod workers. A page is a fixed range of
/// entries (`seq` in (k·pageSize, (k+1)·pageSize]), so no worker waits for
/// another to know where its next page starts; a gap in the log shows as a
/// short page, which the caller names ("the log jumps…").
///
/// The reader owns `db` until `finish()` returns; the caller must call it
/// (it stops workers still ahead, and waits for them to let go of their
/// connections).
final class LogPageReader {
    /// A page of entries; with `checksLinks`, how far the reading thread
    /// checked each entry's hash against the one before it in the page.
    struct Page {
        var entries: [LogEntry] = []
        /// Entries `1..<linked` were checked against the entry before them (the first never is: the page before holds its predecessor).
        var linked = 0
        /// Entry `linked` does not chain to the one before it (nil: it was not checked, or there is none);
        /// `linked` may be `entries.count`: that row did not decode (`LogRows.Links`).
        var broken: RewindError?
    }

    private let workers: [PageWorker]
    private var taken = 0

    /// `endsAtEmptyPage`: the log may end anywhere (`verify` reads past the
    /// head it was told of): an empty page is the last one, not an error.
    /// `cipher`: opens the sealed ops and inverse (nil: only plain text can be read).
    /// `workers`: threads (and connections: `db`, then `db.another()`) reading pages.
    /// `checksLinks`: each entry's hash is checked against the one before it in
    /// its page on the reading thread (the caller checks each page's first
    /// entry, against the page before): the chain is then checked in parallel.
    init(doc: String, db: Database, toSeq stop: Int64, cipher: DocumentCipher?, pageSize: Int = 5_000, endsAtEmptyPage: Bool = false,
         workers: Int = 2, checksLinks: Bool = false) throws(RewindError) {
        var connections = [db]
        // A log of one page needs no second connection.
        while connections.count < max(1, workers) && stop > Int64(pageSize) { connections.append(try db.another()) }
        self.workers = connections.enumerated().map { i, c in
            PageWorker(doc: doc, db: c, toSeq: stop, cipher: cipher, pageSize: pageSize, endsAtEmptyPage: endsAtEmptyPage,
                       checksLinks: checksLinks, first: i, stride: connections.count)
        }
    }

    /// The next page, in order (or why it could not be read). `done`: the
    /// page before, applied and no longer needed (freed on the thread that
    /// made it: memory allocated on one thread and freed on another makes
    /// both wait on malloc's arena lock — perf: ~15 % of a replay's samples).
    func next(done page: consuming [LogEntry]? = nil) throws(RewindError) -> [LogEntry] {
        try nextPage(done: page).entries
    }

    /// `next`, with what the reading thread checked of the chain (`checksLinks`).
    func nextPage(done page: consuming [LogEntry]? = nil) throws(RewindError) -> Page {
        if let page, taken > 0 { workers[(taken - 1) % workers.count].recycle(page) }
        defer { taken += 1 }
        return try workers[taken % workers.count].next()
    }

    /// Stops the workers still ahead and waits until they have let go of their connections.
    func finish() {
        for w in workers { w.finish() }
    }
}

/// One thread reading every `stride`-th page from `first` on, at most two
/// pages ahead of the caller. The next page is asked of PostgreSQL before
/// this one is decoded, so it is read and sent meanwhile.
private final class PageWorker: @unchecked Sendable {
    // The slots are handed over by the semaphores: one side touches a slot
    // only between its `wait` and the other side's `signal`.
    private var slots: [Result<LogPageReader.Page, RewindError>?] = [nil, nil]
    private let filled = DispatchSemaphore(value: 0)
    /// Made at 0 and signalled twice: libdispatch traps when a semaphore is
    /// freed below the value it was made with, which a worker stopped early
    /// (a broken chain, `finish()` mid-way) leaves it at.
    private let free = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private var taken = 0
    /// Pages the caller is done with, freed on this thread.
    private let used = Mutex<[[LogEntry]]>([])

    init(doc: String, db: Database, toSeq stop: Int64, cipher: DocumentCipher?, pageSize: Int, endsAtEmptyPage: Bool,
         checksLinks: Bool, first: Int, stride: Int) {
        let box = DatabaseBox(db)
        free.signal()
        free.signal()
        DispatchQueue.global().async { [self] in
            defer { done.signal() }
            let size = Int64(pageSize)
            var asked = false
            defer { if asked { _ = try? box.db.receive() } }
            func ask(page k: Int64) throws(RewindError) {
                try box.db.send(LogRows.range(doc: doc, afterSeq: k * size, toSeq: min(stop, (k + 1) * size), limit: pageSize))
                asked = true
            }
            var page = Int64(first), put = 0
            while page * size < stop {
                free.wait()
                if stopping.load(ordering: .acquiring) { return }
                used.withLock { $0.removeAll() }
                let result = Result { () throws(RewindError) -> LogPageReader.Page in
                    if !asked { try ask(page: page) }
                    asked = false
                    let rows = try box.db.receiveRows()
                    let next = page + Int64(stride)
                    if next * size < stop && !(rows.count == 0 && endsAtEmptyPage) { try ask(page: next) }
                    var links: LogRows.Links? = checksLinks ? LogRows.Links() : nil
                    let entries = try LogRows.decode(doc: doc, rows, cipher: cipher, links: &links)
                    if entries.isEmpty && endsAtEmptyPage { return .init() }
                    guard !entries.isEmpty else {
                        throw RewindError(.internal, "log of \(doc) ends before entry \(page * size + 1), its head says \(stop)")
                    }
                    // Up to a gap (the caller names it) or a break (handed over, named where it is).
                    return LogPageReader.Page(entries: entries, linked: links?.linked ?? 0, broken: links?.broken)
                }
                slots[put % 2] = result
                put += 1
                filled.signal()
                guard case let .success(done) = result, !done.entries.isEmpty else { return }
                page += Int64(stride)
            }
            // Past the last page: a caller still asking (the log ended before the head it was
            // told of) is answered, not left waiting on a thread that is gone.
            free.wait()
            slots[put % 2] = endsAtEmptyPage ? .success(.init())
                : .failure(RewindError(.internal, "log of \(doc) ends before entry \(stop), its head"))
            filled.signal()
        }
    }

    func next() throws(RewindError) -> LogPageReader.Page {
        filled.wait()
        let page = slots[taken % 2]!
        slots[taken % 2] = nil
        taken += 1
        free.signal()
        return try page.get()
    }

    func recycle(_ page: [LogEntry]) { used.withLock { $0.append(page) } }

    func finish() {
        stopping.store(true, ordering: .releasing)
        free.signal()  // a worker waiting for a free slot sees the flag
        done.wait()
    }

    private struct DatabaseBox: @unchecked Sendable {
        let db: Database
        init(_ db: Database) { self.db = db }
    }
}
