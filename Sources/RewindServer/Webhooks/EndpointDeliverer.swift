import Glibc
import Logging
import RewindCore
import RewindLoop
import RewindStore

/// Delivers one webhook endpoint while this instance holds its lease
/// (`WebhookDelivery`): reads the log after the endpoint's position on a
/// PostgreSQL connection of its own (on libuv's thread pool, as a
/// `GET /v1/events` stream does), posts each entry of the kinds and prefix
/// asked for, signed (`StandardWebhooks`), through the shared `HTTPClient`,
/// several at once but in order per document (`DeliveryWindow`), retries a
/// failed post with backoff and jitter (`RetrySchedule`), records how far it
/// delivered, and disables the endpoint once an entry has failed for the
/// whole retry window. Every write is fenced by the lease: an instance that
/// lost it learns so at its next write and stops.
final class EndpointDeliverer {
    /// What one read or write on the pool needs, used by one job at a time.
    private final class Reader: @unchecked Sendable {
        let conninfo: String
        let keys: Follow.Keys?
        var db: Database?
        init(conninfo: String, keys: Follow.Keys?) {
            self.conninfo = conninfo
            self.keys = keys
        }

        func connected() throws(RewindError) -> Database {
            if let db { return db }
            let db = try Database(conninfo)
            self.db = db
            return db
        }
    }

    /// An entry ready to post: its body is made on the pool, once.
    typealias Body = [UInt8]

    let endpoint: Webhooks.Endpoint
    private let key: [UInt8]
    private let settings: WebhookSettings
    private let owner: String
    private let client: HTTPClient
    private let loop: EventLoop
    private let logger: Logger
    private let clock: () -> UInt64
    private let reader: Reader
    private var window: DeliveryWindow<Body>
    private let timer: Timer
    private var running = true
    /// Posts may start until then (ms, the server's clock): the lease's safe part (`WebhookDelivery`).
    var postsAllowedUntil: UInt64
    private var dbBusy = false
    private var nextReadAt: UInt64 = 0
    private var recorded: Int64
    private var deliveredUnrecorded: Int64 = 0
    private var lastRecordAt: UInt64 = 0
    private var failingRecorded = false
    private var lastError: String?
    private var givingUp: String?
    /// Tells the owner it ended: lost its lease, gave up, or stopped.
    var onEnd: (EndpointDeliverer) -> Void = { _ in }
    var onPosted: (Bool) -> Void = { _ in }

    init?(endpoint: Webhooks.Endpoint, settings: WebhookSettings, owner: String, client: HTTPClient, content: DocumentKeys?,
          conninfo: String, loop: EventLoop, logger: Logger, clock: @escaping () -> UInt64, postsAllowedUntil: UInt64) {
        guard let key = StandardWebhooks.key(ofSecret: endpoint.secret) else { return nil }
        self.endpoint = endpoint
        self.key = key
        self.settings = settings
        self.owner = owner
        self.client = client
        self.loop = loop
        var l = logger
        l[metadataKey: "webhook"] = "\(endpoint.id)"
        self.logger = l
        self.clock = clock
        reader = Reader(conninfo: conninfo, keys: endpoint.withOps ? Follow.Keys(content) : nil)
        window = DeliveryWindow(after: endpoint.position, capacity: settings.readAhead)
        recorded = endpoint.position
        timer = Timer(loop: loop)
        self.postsAllowedUntil = postsAllowedUntil
    }

    func start() {
        logger.info("delivering webhook", metadata: ["url": "\(endpoint.url)", "after": "\(endpoint.position)"])
        pump()
    }

    /// Stops posting (posts under way are left to end; their outcome is ignored) and answers how far it delivered.
    @discardableResult
    func stop() -> Webhooks.Progress {
        let p = progress()
        guard running else { return p }
        running = false
        timer.close()
        window.abandonInFlight()
        if !dbBusy { closeConnection() }
        onEnd(self)
        return p
    }

    private func progress() -> Webhooks.Progress {
        let since = window.failingSince
        return Webhooks.Progress(position: window.deliveredThrough, delivered: deliveredUnrecorded,
                                 failingForSeconds: since.map { Double(clock() - $0) / 1000 }, lastError: lastError)
    }

    // MARK: The one loop of work

    private func pump() {
        guard running else { return }
        if let reason = givingUp {  // no more posts: disabled once the database has it
            if !dbBusy { giveUp(reason) }
            return
        }
        let now = clock()
        if now < postsAllowedUntil {
            for slot in window.start(now: now, maxInFlight: settings.concurrency) { post(slot) }
        }
        // Read on when half the window is free (a receiver slower than the log fills it, and waits).
        let roomToRead = window.room >= min(LogFollower.page, window.capacity / 2)
        if !dbBusy {
            if needsRecord(now) {
                record()
            } else if now >= nextReadAt && roomToRead {
                read()
            }
        }
        // When to look again; answers and finished jobs look again by themselves.
        var wake = UInt64.max
        if roomToRead && !dbBusy { wake = nextReadAt }
        if let retry = window.nextRetry(after: now) { wake = min(wake, retry) }
        if window.deliveredThrough > recorded || deliveredUnrecorded > 0 { wake = min(wake, lastRecordAt + settings.recordEveryMs) }
        if now >= postsAllowedUntil && !window.isEmpty { wake = min(wake, now + 100) }  // a renewed lease lets posts start again
        guard wake != .max else { return timer.stop() }
        timer.start(after: wake > now ? wake - now : 1) { [unowned self] in self.pump() }
    }

    private func needsRecord(_ now: UInt64) -> Bool {
        let failing = window.failingSince != nil
        if failing != failingRecorded { return true }
        guard window.deliveredThrough > recorded || deliveredUnrecorded > 0 else { return false }
        return now >= lastRecordAt + settings.recordEveryMs
    }

    // MARK: Posting

    private func post(_ slot: DeliveryWindow<Body>.Slot) {
        let id = StandardWebhooks.messageID(position: slot.position)
        let timestamp = Int64(time(nil))
        let headers = [("webhook-id", id), ("webhook-timestamp", String(timestamp)),
                       ("webhook-signature", StandardWebhooks.signature(key: key, id: id, timestamp: timestamp, body: slot.entry))]
        client.post(url: endpoint.url, headers: headers, body: slot.entry, timeoutMs: Int(settings.timeoutMs)) { [self] outcome in
            self.answered(slot.position, attempts: slot.attempts, outcome)
        }
    }

    private func answered(_ position: Int64, attempts: Int, _ outcome: HTTPClient.Outcome) {
        guard running else { return }
        let now = clock()
        if case let .status(s) = outcome, (200..<300).contains(s) {
            window.delivered(position)
            deliveredUnrecorded += 1
            if window.failingSince == nil { lastError = nil }
            onPosted(true)
            return pump()
        }
        onPosted(false)
        let why: String
        switch outcome {
        case let .status(s): why = "HTTP \(s)"
        case let .failed(message): why = message
        }
        lastError = "position \(position): \(why)"
        let delay = settings.retry.delayMs(attempt: attempts + 1, unit: Double.random(in: 0..<1))
        let since = window.failed(position, now: now, delayMs: delay)
        if attempts == 0 {
            logger.warning("webhook post failed; trying again", metadata: ["position": "\(position)", "error": "\(why)", "in_ms": "\(delay)"])
        }
        if now - since >= settings.giveUpAfterMs {
            givingUp = "position \(position) failed for \((now - since) / 1000) s (\(why)); replay with `rewind admin webhook replay \(endpoint.id)`"
        }
        pump()
    }

    // MARK: The database, one job at a time

    /// Runs `work` on the pool with the endpoint's connection (made again after an error) and keys, one job at a
    /// time; `done` runs on the loop unless the deliverer stopped meanwhile (its connection is closed then).
    private func onPool<T: Sendable>(_ work: @escaping @Sendable (Database, Follow.Keys?) throws(RewindError) -> T,
                                     _ done: @escaping (Result<T, RewindError>) -> Void) {
        dbBusy = true
        let reader = self.reader
        BackgroundWork.run(on: loop, { () -> Result<T, RewindError> in
            do throws(RewindError) { return .success(try work(try reader.connected(), reader.keys)) } catch {
                reader.db = nil
                return .failure(error)
            }
        }) { [self] result in
            self.dbBusy = false
            guard self.running else { return self.closeConnection() }
            done(result)
        }
    }

    private func read() {
        let after = window.readThrough, prefix = endpoint.prefix, kinds = endpoint.kinds
        let limit = min(LogFollower.page, window.room)
        onPool({ db, keys throws(RewindError) in
            let page = try Follow.page(after: after, prefix: prefix, limit: limit, keys: keys, db: db)
            let entries = page.entries.filter { kinds?.contains($0.kind) ?? true }.map { ($0.position, $0.doc, JSONWriter.encode($0.json)) }
            return (entries: entries, next: page.next, full: page.entries.count == limit)
        }) { [self] result in
            switch result {
            case let .success(page):
                self.window.read(page.entries.map { (position: $0.0, doc: $0.1, entry: $0.2) }, through: page.next)
                self.nextReadAt = page.full ? 0 : self.clock() + self.settings.pollMs
            case let .failure(e):
                self.logger.warning("webhook: the log could not be read; trying again", metadata: ["error": "\(e.message)"])
                self.nextReadAt = self.clock() + 1_000
            }
            self.pump()
        }
    }

    private func record() {
        let p = progress(), endpoint = self.endpoint, owner = self.owner
        let failing = window.failingSince != nil
        lastRecordAt = clock()
        onPool({ db, _ throws(RewindError) in try Webhooks.record(endpoint, owner: owner, p, db: db) }) { [self] result in
            switch result {
            case .success(true):
                self.recorded = max(self.recorded, p.position)
                self.deliveredUnrecorded -= p.delivered
                self.failingRecorded = failing
            case .success(false):
                self.logger.info("webhook no longer this instance's to deliver (lease lost, or changed by an operator)")
                self.stop()  // no job under way now: its connection is closed by `stop`
                return
            case let .failure(e):
                self.logger.warning("webhook: could not record its position; trying again", metadata: ["error": "\(e.message)"])
            }
            self.pump()
        }
    }

    private func giveUp(_ reason: String) {
        let p = progress(), endpoint = self.endpoint, owner = self.owner
        logger.error("webhook disabled: deliveries failed for the whole retry window", metadata: ["reason": "\(reason)"])
        timer.close()
        onPool({ db, _ throws(RewindError) in try Webhooks.giveUp(endpoint, owner: owner, p, reason: reason, db: db) }) { [self] result in
            if case let .failure(error) = result {
                self.logger.error("webhook: could not record that it was disabled", metadata: ["error": "\(error.message)"])
            }
            self.running = false
            self.closeConnection()
            self.onEnd(self)
        }
    }

    private func closeConnection() {
        let reader = self.reader
        BackgroundWork.run(on: loop, { reader.db = nil }) { _ in }
    }
}

/// How webhooks are delivered (`rewind-server --webhook-*`).
public struct WebhookSettings: Sendable {
    /// Whether this instance delivers webhooks at all (`--no-webhooks`: another instance does).
    public var enabled = true
    /// Posts under way at once per endpoint (never two of one document).
    public var concurrency = 8
    /// A post's whole time, connecting included.
    public var timeoutMs: UInt64 = 10_000
    /// An endpoint's lease (`WebhookDelivery`): how long another instance waits for one that vanished.
    public var leaseSeconds = 30
    public var retry = RetrySchedule(baseMs: 2_000, capMs: 3_600_000)
    /// After an entry has failed this long, the endpoint is disabled.
    public var giveUpAfterMs: UInt64 = 86_400_000
    /// How often a caught-up deliverer reads the log again.
    public var pollMs: UInt64 = 200
    /// Entries read ahead per endpoint at most (bounds memory when a receiver is slow or down).
    public var readAhead = 1_000
    /// How often progress is written at most while deliveries go on.
    public var recordEveryMs: UInt64 = 250

    public init() {}
}
