/// The deterministic state machine of one document: its state at the head,
/// the recent ops that late transactions are rebased through, and which
/// transaction ids it has seen.
///
/// The live server and every replay run through `append` and `replay` here, so
/// the state they rebuild cannot differ: replay applies exactly the ops that
/// live serving computed and stored.
public struct DocumentLedger: Sendable {
    public let doc: String
    public private(set) var document = Document()
    public private(set) var version: Int64 = 0
    public let limits: Limits

    /// Ops of the newest versions, oldest first; `recentStart` is the version of the first.
    private var recent: [[Op]] = []
    private var recentStart: Int64 = 1
    private var transactions: [TxKey: TxRecord] = [:]

    public struct TxKey: Hashable, Sendable {
        public let user: Int64
        public let tx: Key
    }

    public struct TxRecord: Sendable, Equatable {
        public let version: Int64
        public let digest: String
    }

    /// A transaction from a terminal, not yet placed in the log.
    public struct Submission: Sendable {
        public var tx: String
        public var base: Int64
        public var ops: [Op]
        public var action: String?
        public var userID: Int64
        public var userName: String
        public var client: String
        /// Chosen by the shell: identity and clock are not the core's to make up.
        public var eventID: String
        public var time: Int64

        public init(tx: String, base: Int64, ops: [Op], action: String?, userID: Int64, userName: String,
                    client: String, eventID: String, time: Int64)
        {
            self.tx = tx; self.base = base; self.ops = ops; self.action = action; self.userID = userID
            self.userName = userName; self.client = client; self.eventID = eventID; self.time = time
        }

        /// Ops and action: what makes a resubmission "the same transaction".
        public var digest: String {
            Fingerprint.hex(JSONWriter.encode(.obj([("ops", Op.encodeList(ops)), ("action", action.map { .string($0) })])))
        }
    }

    public enum Outcome: Sendable {
        /// A new event, already applied to this ledger.
        case appended(Event)
        /// The same transaction was already recorded at this version.
        case duplicate(version: Int64)
    }

    public init(doc: String, limits: Limits = Limits()) {
        self.doc = doc
        self.limits = limits
    }

    public func transaction(user: Int64, tx: String) -> TxRecord? { transactions[TxKey(user: user, tx: Key(tx))] }

    /// Rebases `s` onto the head, applies it atomically and returns the event to append.
    public mutating func append(_ s: Submission) throws(RewindError) -> Outcome {
        let digest = s.digest
        if let seen = transaction(user: s.userID, tx: s.tx) {
            guard seen.digest == digest else {
                throw .conflict("transaction \"\(s.tx)\" was already used with different content",
                                details: ["version": .int(seen.version)])
            }
            return .duplicate(version: seen.version)
        }
        guard s.base <= version else {
            throw RewindError(.version, "base \(s.base) is beyond the head \(version)", details: ["head": .int(version)])
        }
        guard s.base >= 0, version - s.base <= Int64(limits.maxRebaseDistance), s.base + 1 >= recentStart || s.base == version else {
            throw RewindError(.version, "base \(s.base) is too far behind the head \(version) (at most \(limits.maxRebaseDistance) versions); open the document again",
                              details: ["head": .int(version), "limit": .int(Int64(limits.maxRebaseDistance))])
        }
        var ops = s.ops
        if s.base < version {
            let concurrent = recent[Int(s.base + 1 - recentStart)...].flatMap { $0 }
            ops = TextTransform.rebase(ops, through: concurrent)
        }
        let applied: Document.Applied
        do {
            applied = try document.apply(ops, limits: limits)
        } catch let e where e.code == .notFound && s.base < version {
            throw RewindError(.conflict, "\(e.message) (changed by a concurrent transaction since version \(s.base))", details: e.details)
        }
        let event = Event(doc: doc, version: version + 1, id: s.eventID, tx: s.tx, txDigest: digest, userID: s.userID,
                          userName: s.userName, client: s.client, group: s.eventID, kind: .edit, action: s.action,
                          base: s.base, ops: applied.ops, inverse: applied.inverse, refers: nil, time: s.time)
        record(event)
        return .appended(event)
    }

    /// Applies an event from the log. Versions must follow on without a gap.
    public mutating func replay(_ e: Event) throws(RewindError) {
        guard e.version == version + 1 else {
            throw RewindError(.internal, "log of \(doc) jumps from version \(version) to \(e.version)")
        }
        do { try document.replay(e.ops) } catch {
            throw RewindError(.internal, "event \(e.version) of \(doc) does not apply: \(error.message)")
        }
        record(e)
    }

    private mutating func record(_ e: Event) {
        version = e.version
        recent.append(e.ops)
        if recent.count > 2 * limits.maxRebaseDistance {
            let drop = recent.count - limits.maxRebaseDistance
            recent.removeFirst(drop)
            recentStart += Int64(drop)
        }
        transactions[TxKey(user: e.userID, tx: Key(e.tx))] = TxRecord(version: e.version, digest: e.txDigest)
    }
}
