import Glibc
import Logging
import RewindCore
import RewindLoop

/// Who may connect, and how often, counted: connections per user,
/// connections per address that have not said hello, failed hellos per
/// address. Plain state, no sockets and no clock of its own (the caller
/// passes `now`), so it is tested on its own (`AdmissionTests`); `Server`
/// carries out what it decides (a `bye` that says why, a log line).
struct Admission {
    let maxHandshakesPerAddress: Int
    let maxConnectionsPerUser: Int
    let failedHellosPerSecond: Double
    let failedHelloBurst: Double
    private(set) var handshakesPerAddress: [String: Int] = [:]
    private(set) var connectionsPerUser: [Int64: Int] = [:]
    private var failedHellos: [String: TokenBucket] = [:]

    init(config: ServerConfig) {
        maxHandshakesPerAddress = config.maxHandshakesPerAddress
        maxConnectionsPerUser = config.maxConnectionsPerUser
        failedHellosPerSecond = config.failedHellosPerSecond
        failedHelloBurst = config.failedHelloBurst
    }

    /// A connection from `address` starts waiting to say hello; false: too many from there already.
    mutating func startHandshake(address: String) -> Bool {
        let n = handshakesPerAddress[address, default: 0]
        guard n < maxHandshakesPerAddress else { return false }
        handshakesPerAddress[address] = n + 1
        return true
    }

    /// A connection from `address` said hello, or ended before it did.
    mutating func endHandshake(address: String) {
        handshakesPerAddress[address, default: 1] -= 1
        if handshakesPerAddress[address] == 0 { handshakesPerAddress[address] = nil }
    }

    /// How long `address` waits before its next hello is even checked (nil: not at all).
    mutating func helloRetryAfter(address: String, now: UInt64) -> UInt64? {
        failedHellos[address]?.wait(now: now)
    }

    /// A hello from `address` failed; true when that address is now throttled.
    mutating func helloFailed(address: String, now: UInt64) -> Bool {
        var bucket = failedHellos[address] ?? TokenBucket(rate: failedHellosPerSecond, burst: failedHelloBurst, now: now)
        let throttled = bucket.take(now: now) != nil
        failedHellos[address] = bucket
        return throttled
    }

    /// One more connection of `user`; false: it is at its limit.
    mutating func admitUser(_ user: Int64) -> Bool {
        let n = connectionsPerUser[user, default: 0]
        guard n < maxConnectionsPerUser else { return false }
        connectionsPerUser[user] = n + 1
        return true
    }

    mutating func userLeft(_ user: Int64) {
        guard let n = connectionsPerUser[user] else { return }
        connectionsPerUser[user] = n > 1 ? n - 1 : nil
    }

    /// Addresses whose failed hellos are forgotten (their bucket refilled): bounded memory.
    mutating func forgetFullBuckets(now: UInt64) {
        for (address, var bucket) in failedHellos where bucket.isFull(now: now) { failedHellos[address] = nil }
    }

    var throttledAddresses: Int { failedHellos.count }
}

/// What `Admission` decides, carried out: each refusal is a `bye` (or a
/// reply) that says why; and the descriptor limit. Owns the counts and the
/// cap on connections that `--max-connections` and `ulimit -n` leave.
final class AdmissionGate {
    private var admission: Admission
    private let config: ServerConfig
    private let logger: Logger
    private let sessions: Sessions
    private let clock: () -> UInt64
    /// Connections accepted at most: `--max-connections`, lowered to fit the descriptor limit.
    private(set) var connectionCap: Int
    private var acceptErrorLoggedAt: UInt64 = 0
    /// Connections counted against their address until they say hello or end (by id).
    private var handshaking: Set<Int> = []
    private var now: UInt64 { clock() }

    init(config: ServerConfig, logger: Logger, sessions: Sessions, clock: @escaping () -> UInt64) {
        admission = Admission(config: config)
        connectionCap = config.maxConnections
        self.config = config
        self.logger = logger
        self.sessions = sessions
        self.clock = clock
    }

    /// At accept, before the connection is counted: false (and it is told why) past the cap.
    func hasRoom(for c: Connection) -> Bool {
        guard sessions.count >= connectionCap else { return true }
        c.close(reason: "rate_limited", retry: true, message: "server at its limit of \(connectionCap) connections")
        return false
    }

    /// Addresses whose failed hellos are forgotten (the sweep, once a second).
    func sweep() { admission.forgetFullBuckets(now: now) }

    /// At accept: a bounded number of connections per address may be waiting
    /// to say hello. One past it is refused — in HTTP (`503`, `Retry-After`)
    /// if its first bytes are HTTP (a browser's WebSocket, say), else with a
    /// `bye` — as soon as they show which, or after a second of silence.
    func admitHandshake(_ c: Connection) {
        guard admission.startHandshake(address: c.address) else {
            logger.notice("refusing a connection: too many handshakes from one address", metadata: ["address": "\(c.address)"])
            c.refusal = (reason: "rate_limited",
                         message: "more than \(config.maxHandshakesPerAddress) connections from \(c.address) have not said hello yet",
                         until: now + Self.refusalWaitMs)
            return
        }
        handshaking.insert(c.id)
    }

    /// How long a refused connection may take to show which protocol it speaks.
    static let refusalWaitMs: UInt64 = 1_000

    /// Before checking a token: an address whose hellos keep failing waits (no database lookup).
    func helloRetryAfter(_ c: Connection) -> UInt64? {
        admission.helloRetryAfter(address: c.address, now: now)
    }

    /// A hello failed: counted against its address, and logged (never with the token).
    func helloFailed(_ c: Connection, claimed user: String?, why: String) {
        let throttled = admission.helloFailed(address: c.address, now: now)
        logger.notice("hello refused", metadata: ["address": "\(c.address)", "user": "\(user ?? "-")", "why": "\(why)",
                                                  "throttled": "\(throttled)"])
    }

    /// Hello succeeded: the connection counts for its user now, not for its address.
    /// False (and the connection closed) when the user is at its limit.
    func admitUser(_ c: Connection, _ user: Int64) -> Bool {
        if handshaking.remove(c.id) != nil { admission.endHandshake(address: c.address) }
        guard admission.admitUser(user) else {
            c.close(reason: "rate_limited", retry: true,
                    message: "at most \(config.maxConnectionsPerUser) connections per user; close one first")
            return false
        }
        return true
    }

    /// A connection ended (with the session made on it, if any): its counts go.
    func ended(_ c: Connection, _ session: Session?) {
        if handshaking.remove(c.id) != nil {
            admission.endHandshake(address: c.address)
        } else if let session {
            admission.userLeft(session.user.id)
        }
    }

    /// Accepting must never fail for lack of descriptors (libuv then closes
    /// the connection without a word): the cap leaves room below the limit,
    /// so the one past the cap is accepted and told `bye` `rate_limited`.
    func fitDescriptorLimit() {
        let reserve = 64
        var rl = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl) == 0 else { return }
        let wanted = rlim_t(config.maxConnections + reserve)
        if rl.rlim_cur < wanted {
            var raised = rl
            raised.rlim_cur = min(wanted, rl.rlim_max)
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { rl = raised }
        }
        let fit = Int(rl.rlim_cur) - reserve
        if fit < config.maxConnections {
            connectionCap = max(1, fit)
            logger.warning("""
                the descriptor limit (ulimit -n: \(rl.rlim_cur)) is below --max-connections \(config.maxConnections) \
                plus \(reserve) kept in reserve; accepting at most \(connectionCap) connections. Raise it \
                (ulimit -n, or LimitNOFILE= in the systemd unit) to serve more.
                """)
        }
    }

    func acceptFailed(_ code: Int32) {
        let now = self.now
        guard now >= acceptErrorLoggedAt + 1_000 else { return }
        acceptErrorLoggedAt = now
        logger.warning("accepting a connection failed: \(uvErrorText(code))", metadata: ["connections": "\(sessions.count)"])
    }
}
