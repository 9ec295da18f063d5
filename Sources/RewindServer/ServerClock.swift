import RewindLoop

/// Milliseconds by the loop's clock, plus what a test moved it on
/// (`Server.advanceClock`): what timeouts and rate limits read, so that a
/// server test can make time pass without waiting for it.
final class ServerClock {
    private let loop: EventLoop
    var advance: UInt64 = 0

    init(loop: EventLoop) { self.loop = loop }

    var now: UInt64 { loop.now &+ advance }
}
