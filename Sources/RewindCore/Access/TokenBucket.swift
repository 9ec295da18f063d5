/// A token bucket: `rate` tokens a second, at most `burst` saved up. Pure:
/// the caller passes the clock, so tests step it by hand.
public struct TokenBucket: Sendable {
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var last: UInt64

    public init(rate: Double, burst: Double, now: UInt64) {
        self.rate = rate
        self.burst = burst
        tokens = burst
        last = now
    }

    /// Takes a token: nil when one was there, else the milliseconds until one will be.
    public mutating func take(now: UInt64) -> UInt64? {
        refill(now)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return UInt64(((1 - tokens) * 1000 / rate).rounded(.up))
    }

    /// Like `take`, without taking: nil when a token is there.
    public mutating func wait(now: UInt64) -> UInt64? {
        refill(now)
        return tokens >= 1 ? nil : UInt64(((1 - tokens) * 1000 / rate).rounded(.up))
    }

    /// True when the bucket has refilled completely (nothing to remember).
    public mutating func isFull(now: UInt64) -> Bool {
        refill(now)
        return tokens >= burst
    }

    private mutating func refill(_ now: UInt64) {
        guard now > last else { return }
        tokens = min(burst, tokens + Double(now - last) * rate / 1000)
        last = now
    }
}
