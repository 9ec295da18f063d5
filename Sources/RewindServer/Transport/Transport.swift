import RewindCore
import RewindLoop

/// Bytes on the wire and protocol messages, both ways, for a framing other
/// than NDJSON lines: JSON text frames over a WebSocket (`WebSocketTransport`).
/// Lines need no object of their own: the connection's `Wire` holds their
/// decoder and answers the same questions for them.
protocol Transport: AnyObject {
    /// Bytes read from the socket.
    func received(_ data: UnsafeRawBufferPointer)
    /// The next complete request, or nil when none is complete yet.
    func next() -> FrameDecoder.Frame?
    /// Bytes held, complete requests and an incomplete one.
    var bufferedBytes: Int { get }
    /// An incomplete request is held (after `next()` returned nil).
    var holdsPartial: Bool { get }
    /// Its bytes.
    var partialBytes: Int { get }

    /// `message` (one reply or push: a JSON object and a newline) as it goes
    /// on the wire, appended to `out`; returns the bytes appended.
    func frame(_ message: SharedBytes, into out: inout [SharedBytes]) -> Int
    /// A slice of a reply produced as it is read (`ReplyStream`): `first` and
    /// `last` say where in the reply it lies. Appended to `out`; returns the bytes appended.
    func frame(slice: SharedBytes, first: Bool, last: Bool, into out: inout [SharedBytes]) -> Int
    /// What to write after the `bye` before the connection closes (a WebSocket's close frame).
    func closing(reason: String) -> [SharedBytes]
    /// Bytes the transport itself has to send (a WebSocket's pongs, its close echo), taken once.
    func takeOwnOutput() -> [SharedBytes]
    /// The peer said it is done (a WebSocket close frame): end the connection once what is queued is written.
    var peerClosed: Bool { get }
    /// Nothing more is read: the peer closed, or broke the protocol (`peerClosed` says which).
    var readEnded: Bool { get }
    /// Frames arrived that carried no request (a pong): activity for the idle timer. Taken once.
    func takeHeardSomething() -> Bool
    /// A silent peer is asked to show it is alive (a WebSocket ping; a browser
    /// page cannot send one itself). NDJSON has no such frame: its clients ping.
    func keepAlive()
}
