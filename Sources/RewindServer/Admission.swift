import Glibc
import RewindCore
import RewindLoop

/// Who may connect, and how often: connections per user, connections per
/// address that have not said hello, failed hellos per address, and the
/// descriptor limit. Each refusal is a `bye` (or a reply) that says why.
extension Server {
    /// At accept: a bounded number of connections per address may be waiting to say hello.
    func admitHandshake(_ c: Connection) -> Bool {
        let n = handshakesPerAddress[c.address, default: 0]
        guard n < config.maxHandshakesPerAddress else {
            logger.notice("refusing a connection: too many handshakes from one address", metadata: ["address": "\(c.address)"])
            c.close(reason: "rate_limited", retry: true,
                    message: "more than \(config.maxHandshakesPerAddress) connections from \(c.address) have not said hello yet")
            return false
        }
        handshakesPerAddress[c.address] = n + 1
        c.countedHandshake = true
        return true
    }

    /// Before checking a token: an address whose hellos keep failing waits (no database lookup).
    func helloRetryAfter(_ c: Connection) -> UInt64? {
        failedHellos[c.address]?.wait(now: now)
    }

    /// A hello failed: counted against its address, and logged (never with the token).
    func helloFailed(_ c: Connection, claimed user: String?, why: String) {
        var bucket = failedHellos[c.address] ?? TokenBucket(rate: config.failedHellosPerSecond, burst: config.failedHelloBurst, now: now)
        let throttled = bucket.take(now: now) != nil
        failedHellos[c.address] = bucket
        logger.notice("hello refused", metadata: ["address": "\(c.address)", "user": "\(user ?? "-")", "why": "\(why)",
                                                  "throttled": "\(throttled)"])
    }

    /// Hello succeeded: the connection counts for its user now, not for its address.
    /// False (and the connection closed) when the user is at its limit.
    func admitUser(_ c: Connection, _ user: Int64) -> Bool {
        if c.countedHandshake {
            c.countedHandshake = false
            handshakesPerAddress[c.address, default: 1] -= 1
            if handshakesPerAddress[c.address] == 0 { handshakesPerAddress[c.address] = nil }
        }
        let n = connectionsPerUser[user, default: 0]
        guard n < config.maxConnectionsPerUser else {
            c.close(reason: "rate_limited", retry: true,
                    message: "at most \(config.maxConnectionsPerUser) connections per user; close one first")
            return false
        }
        connectionsPerUser[user] = n + 1
        return true
    }

    /// A connection ended: its counts go.
    func admissionEnded(_ c: Connection) {
        if c.countedHandshake {
            c.countedHandshake = false
            handshakesPerAddress[c.address, default: 1] -= 1
            if handshakesPerAddress[c.address] == 0 { handshakesPerAddress[c.address] = nil }
        } else if let user = c.user?.id, let n = connectionsPerUser[user] {
            connectionsPerUser[user] = n > 1 ? n - 1 : nil
        }
    }

    func forgetFullBuckets(now: UInt64) {
        for (address, var bucket) in failedHellos where bucket.isFull(now: now) { failedHellos[address] = nil }
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
        logger.warning("accepting a connection failed: \(uvErrorText(code))", metadata: ["connections": "\(connectionCount)"])
    }
}
