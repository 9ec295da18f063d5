import RewindCore
import RewindLoop

extension Connection {
    /// What the connection speaks, known from its first bytes (`Connection+Web.swift`).
    enum Mode {
        /// A PROXY header is read first (a trusted load balancer: `--proxy-protocol-from`), into `head`.
        case proxyHeader
        case detecting, lines, http, webSocket
    }

    /// Bytes on the wire ↔ messages, both ways: NDJSON lines (the decoder,
    /// held in the connection itself: no object of its own for every idle
    /// terminal, `scripts/bench/idle`), or JSON text frames once a WebSocket
    /// upgrade made `webSocket` (`Transport`). The session, its mailbox,
    /// the output bound and every limit above it are the same for both.
    struct Wire {
        /// NDJSON lines (unused once a WebSocket speaks).
        private var lines: FrameDecoder
        var mode = Mode.detecting
        /// The WebSocket's framing, from its upgrade on (nil: lines).
        var webSocket: WebSocketTransport?

        init(maxFrameBytes: Int) { lines = FrameDecoder(maxFrameBytes: maxFrameBytes) }

        /// Bytes read from the socket.
        mutating func received(_ data: UnsafeRawBufferPointer) {
            if let webSocket { webSocket.received(data) } else { lines.append(data) }
        }

        /// The next complete request, or nil when none is complete yet.
        mutating func next() -> FrameDecoder.Frame? {
            if let webSocket { return webSocket.next() }
            return lines.next()
        }
        /// Bytes held, complete requests and an incomplete one.
        var bufferedBytes: Int { webSocket?.bufferedBytes ?? lines.bufferedBytes }
        /// An incomplete request is held (after `next()` returned nil).
        var holdsPartial: Bool { webSocket?.holdsPartial ?? lines.holdsPartialLine }
        /// Its bytes.
        var partialBytes: Int { webSocket?.partialBytes ?? lines.partialBytes }

        /// `message` (one reply or push: a JSON object and a newline) as it
        /// goes on the wire, appended to `out`; returns the bytes appended.
        /// A line is its own bytes.
        func frame(_ message: SharedBytes, into out: inout [SharedBytes]) -> Int {
            if let webSocket { return webSocket.frame(message, into: &out) }
            out.append(message)
            return message.count
        }

        /// A slice of a reply produced as it is read (`ReplyStream`): `first`
        /// and `last` say where in the reply it lies.
        func frame(slice: SharedBytes, first: Bool, last: Bool, into out: inout [SharedBytes]) -> Int {
            if let webSocket { return webSocket.frame(slice: slice, first: first, last: last, into: &out) }
            out.append(slice)
            return slice.count
        }

        /// What to write after the `bye` before the connection closes (a WebSocket's close frame).
        func closing(reason: String) -> [SharedBytes] { webSocket?.closing(reason: reason) ?? [] }
        /// Bytes the framing itself has to send (a WebSocket's pongs, its close echo), taken once.
        func takeOwnOutput() -> [SharedBytes] { webSocket?.takeOwnOutput() ?? [] }
        /// The peer said it is done (a WebSocket close frame).
        var peerClosed: Bool { webSocket?.peerClosed ?? false }
        /// Nothing more is read: the peer closed, or broke the protocol.
        var readEnded: Bool { webSocket?.readEnded ?? false }
        /// Frames arrived that carried no request (a pong): activity. Taken once.
        func takeHeardSomething() -> Bool { webSocket?.takeHeardSomething() ?? false }
        /// A silent WebSocket peer is pinged; NDJSON has no such frame (its clients ping).
        func keepAlive() { webSocket?.keepAlive() }
    }
}
