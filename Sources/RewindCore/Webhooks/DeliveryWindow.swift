/// The entries a webhook endpoint is being sent, in log order: which may be
/// posted now, which wait, and how far the endpoint's stored position may
/// move. Pure: the deliverer (RewindServer/Webhooks) feeds it entries, times
/// and outcomes.
///
/// Several posts may be under way at once (`maxInFlight`), but never two of
/// one document, and an entry of a document waits for every earlier entry
/// of that document to be delivered: deliveries are in order per document.
/// The stored position is the last position below which everything was
/// delivered (or was not for this endpoint); after a restart the entries
/// past it are posted again, so a receiver may see an entry twice (at least
/// once; the `webhook-id` tells it so) but never misses one.
public struct DeliveryWindow<Entry> {
    public enum State: Equatable, Sendable { case waiting, inFlight, delivered }

    public struct Slot {
        public let position: Int64
        public let doc: String
        public let entry: Entry
        public fileprivate(set) var state = State.waiting
        /// Failed posts so far.
        public fileprivate(set) var attempts = 0
        /// Not to be posted again before this (ms, the deliverer's clock).
        public fileprivate(set) var retryAt: UInt64 = 0
        /// When its first post failed (nil: none has).
        public fileprivate(set) var failingSince: UInt64?
    }

    public private(set) var slots: [Slot] = []
    /// Slots posted now, and slots that failed at least once and are not delivered: kept as counts,
    /// because the deliverer asks after every answer (thousands a second) and most of the time both are small.
    public private(set) var inFlight = 0
    private var failing = 0
    /// Every entry up to here has been read into the window (or was not for this endpoint).
    public private(set) var readThrough: Int64
    public let capacity: Int

    public init(after position: Int64, capacity: Int) {
        readThrough = position
        self.capacity = max(1, capacity)
    }

    /// Up to where everything was delivered: what may be stored.
    public var deliveredThrough: Int64 {
        if let first = slots.first { return first.position - 1 }
        return readThrough
    }

    public var room: Int { capacity - slots.count }
    public var isEmpty: Bool { slots.isEmpty }

    /// Entries read after `readThrough`, by position, then how far the read went (`through` ≥ the last entry's position).
    public mutating func read(_ entries: [(position: Int64, doc: String, entry: Entry)], through: Int64) {
        for e in entries where e.position > readThrough {
            precondition(slots.count < capacity, "read more than the window's room")
            slots.append(Slot(position: e.position, doc: e.doc, entry: e.entry))
            readThrough = e.position
        }
        readThrough = max(readThrough, through)
    }

    /// The slots to post now (marked in flight): in order, never a document's
    /// entry while an earlier one of it is not delivered, at most `maxInFlight` at once.
    public mutating func start(now: UInt64, maxInFlight: Int) -> [Slot] {
        guard inFlight < maxInFlight else { return [] }
        var started: [Slot] = []
        var busyDocs = Set<String>()
        for i in slots.indices {
            guard inFlight < maxInFlight else { break }
            let s = slots[i]
            if s.state == .delivered { continue }
            if s.state == .waiting && s.retryAt <= now && !busyDocs.contains(s.doc) {
                slots[i].state = .inFlight
                inFlight += 1
                started.append(slots[i])
            }
            busyDocs.insert(s.doc)
        }
        return started
    }

    /// The post of the entry at `position` was answered 2xx.
    public mutating func delivered(_ position: Int64) {
        guard let i = slots.firstIndex(where: { $0.position == position }), slots[i].state == .inFlight else { return }
        slots[i].state = .delivered
        inFlight -= 1
        if slots[i].failingSince != nil { failing -= 1 }
        slots[i].failingSince = nil
        let done = slots.prefix { $0.state == .delivered }.count
        slots.removeFirst(done)
    }

    /// Its post failed: it waits `delayMs`; answers since when it has been failing.
    @discardableResult
    public mutating func failed(_ position: Int64, now: UInt64, delayMs: UInt64) -> UInt64 {
        guard let i = slots.firstIndex(where: { $0.position == position }), slots[i].state == .inFlight else { return now }
        slots[i].state = .waiting
        inFlight -= 1
        if slots[i].failingSince == nil { failing += 1 }
        slots[i].attempts += 1
        slots[i].retryAt = now + delayMs
        let since = slots[i].failingSince ?? now
        slots[i].failingSince = since
        return since
    }

    /// Every slot back to waiting (the posts under way were abandoned: a lease lost, a shutdown).
    public mutating func abandonInFlight() {
        for i in slots.indices where slots[i].state == .inFlight { slots[i].state = .waiting }
        inFlight = 0
    }

    /// The earliest time a waiting slot may be posted again (nil: none waits on a retry).
    public func nextRetry(after now: UInt64) -> UInt64? {
        guard failing > 0 else { return nil }  // only a failed slot waits on a retry
        return slots.lazy.filter { $0.state == .waiting && $0.retryAt > now }.map(\.retryAt).min()
    }

    /// The oldest failure among the slots not yet delivered.
    public var failingSince: UInt64? { failing > 0 ? slots.lazy.compactMap(\.failingSince).min() : nil }
}

/// When a failed delivery is tried again: exponential backoff from `baseMs`,
/// doubling each attempt up to `capMs`, with jitter (the delay is drawn
/// between half and all of it) so that endpoints that failed together do
/// not all come back at the same instant.
public struct RetrySchedule: Sendable {
    public var baseMs: UInt64
    public var capMs: UInt64

    public init(baseMs: UInt64, capMs: UInt64) {
        self.baseMs = max(1, baseMs)
        self.capMs = max(self.baseMs, capMs)
    }

    /// The wait after the `attempt`-th failure (1 is the first), `unit` drawn in [0, 1).
    public func delayMs(attempt: Int, unit: Double) -> UInt64 {
        let shift = UInt64(min(max(attempt - 1, 0), 40))
        let full = baseMs > (capMs >> shift) ? capMs : min(capMs, baseMs << shift)
        let jitter = UInt64(Double(full / 2) * min(max(unit, 0), 1))
        return full - full / 2 + jitter
    }
}
