/// A token bucket: `rate` tokens a second, at most `burst` saved up. Pure:
/// the caller passes the clock, so tests step it by hand.
public struct TokenBucket: Sendable {
    public let rate: Double
    public let burst: Double
    private var state: BucketState

    public init(rate: Double, burst: Double, now: UInt64) {
        self.rate = rate
        self.burst = burst
        state = BucketState(burst: burst, now: now)
    }

    /// Takes a token: nil when one was there, else the milliseconds until one will be.
    public mutating func take(now: UInt64) -> UInt64? { state.take(now: now, rate: rate, burst: burst) }

    /// Like `take`, without taking: nil when a token is there.
    public mutating func wait(now: UInt64) -> UInt64? { state.wait(now: now, rate: rate, burst: burst) }

    /// True when the bucket has refilled completely (nothing to remember).
    public mutating func isFull(now: UInt64) -> Bool { state.isFull(now: now, rate: rate, burst: burst) }
}

/// What a token bucket holds, without its rate and burst: for buckets kept
/// by the thousand with the same two numbers (one per connection), which the
/// caller passes on each call instead.
public struct BucketState: Sendable {
    private var tokens: Double
    private var last: UInt64

    public init(burst: Double, now: UInt64) {
        tokens = burst
        last = now
    }

    public mutating func take(now: UInt64, rate: Double, burst: Double) -> UInt64? {
        refill(now, rate: rate, burst: burst)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return UInt64(((1 - tokens) * 1000 / rate).rounded(.up))
    }

    public mutating func wait(now: UInt64, rate: Double, burst: Double) -> UInt64? {
        refill(now, rate: rate, burst: burst)
        return tokens >= 1 ? nil : UInt64(((1 - tokens) * 1000 / rate).rounded(.up))
    }

    public mutating func isFull(now: UInt64, rate: Double, burst: Double) -> Bool {
        refill(now, rate: rate, burst: burst)
        return tokens >= burst
    }

    private mutating func refill(_ now: UInt64, rate: Double, burst: Double) {
        guard now > last else { return }
        tokens = min(burst, tokens + Double(now - last) * rate / 1000)
        last = now
    }
}
