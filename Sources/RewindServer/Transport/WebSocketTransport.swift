import CWslay
import RewindCore
import RewindLoop

/// JSON over a WebSocket (RFC 6455; PROTOCOL.md "WebSocket and the web"):
/// one request or reply per text frame. The only Swift that calls wslay.
///
/// **In**, wslay's event API does the framing: it unmasks, reassembles
/// fragments (control frames may come between them), checks UTF-8 (1007),
/// the mask (1002) and the message length (1009), answers pings and echoes a
/// close. It reads from the bytes libuv gave us (`received`); complete text
/// messages wait in `messages` for the connection's mailbox, as lines wait in
/// a `FrameDecoder`. A binary message is refused with 1003.
///
/// **Out**, data frames are not given to wslay: its queue copies each
/// message, and a push is encoded once for every subscriber. A server frame
/// is unmasked, so its payload is the push's own bytes behind a header of 2
/// to 10 bytes (`WebSocketFrame.header`, cached per message). wslay sends
/// only its control frames (pongs, the close echo, our close and pings),
/// through `takeOwnOutput`.
final class WebSocketTransport: Transport {
    private var context: wslay_event_context_ptr?
    private var input: [UInt8] = []
    private var inputStart = 0
    private var messages: [[UInt8]] = []
    private var queuedBytes = 0
    private var own: [SharedBytes] = []
    /// Payload bytes of a message still arriving (for the partial-request bounds).
    private(set) var partialBytes = 0
    private(set) var peerClosed = false
    /// A ping sent and not answered yet (the server's keepalive).
    private(set) var pingOutstanding = false
    /// Set when a pong (or any frame) arrived: the connection counts it as activity.
    var heardSomething = false
    /// A protocol error wslay closes without a status code (a frame it cannot
    /// read: a control frame over 125 bytes or fragmented; a close payload of
    /// one byte): this server closes with 1002 itself, and wslay sends nothing more.
    private var failed = false

    init(maxMessageBytes: Int) {
        var callbacks = wslay_event_callbacks()
        callbacks.recv_callback = { _, buf, len, _, user in
            let me = Unmanaged<WebSocketTransport>.fromOpaque(user!).takeUnretainedValue()
            return me.readInput(into: buf!, max: len)
        }
        callbacks.send_callback = { _, data, len, _, user in
            let me = Unmanaged<WebSocketTransport>.fromOpaque(user!).takeUnretainedValue()
            me.own.append(SharedBytes(Array(UnsafeBufferPointer(start: data, count: len))))
            return len
        }
        callbacks.on_frame_recv_chunk_callback = { _, arg, user in
            let me = Unmanaged<WebSocketTransport>.fromOpaque(user!).takeUnretainedValue()
            me.partialBytes += arg!.pointee.data_length
        }
        callbacks.on_msg_recv_callback = { ctx, arg, user in
            let me = Unmanaged<WebSocketTransport>.fromOpaque(user!).takeUnretainedValue()
            me.messageReceived(ctx!, arg!.pointee)
        }
        // Held unretained: the connection owns the transport and frees the context in deinit.
        wslay_event_context_server_init(&context, &callbacks, Unmanaged.passUnretained(self).toOpaque())
        wslay_event_config_set_max_recv_msg_length(context, UInt64(maxMessageBytes))
    }

    deinit { wslay_event_context_free(context) }

    private func readInput(into buf: UnsafeMutablePointer<UInt8>, max len: Int) -> Int {
        let available = input.count - inputStart
        guard available > 0 else {
            wslay_event_set_error(context, Int32(WSLAY_ERR_WOULDBLOCK.rawValue))
            return -1
        }
        let n = min(len, available)
        input.withUnsafeBufferPointer { buf.update(from: $0.baseAddress! + inputStart, count: n) }
        inputStart += n
        if inputStart == input.count {
            input.removeAll(keepingCapacity: true)
            inputStart = 0
        }
        return n
    }

    private func messageReceived(_ ctx: wslay_event_context_ptr, _ m: wslay_event_on_msg_recv_arg) {
        heardSomething = true
        switch m.opcode {
        case UInt8(WSLAY_TEXT_FRAME.rawValue):
            partialBytes = 0
            var bytes = Array(UnsafeBufferPointer(start: m.msg, count: m.msg_length))
            if bytes.last == 0x0A { bytes.removeLast() }  // a trailing newline is allowed and ignored
            if bytes.last == 0x0D { bytes.removeLast() }
            guard !bytes.isEmpty else { return }  // an empty message is ignored, as an empty line is
            queuedBytes += bytes.count
            messages.append(bytes)
        case UInt8(WSLAY_BINARY_FRAME.rawValue):
            partialBytes = 0
            let reason = Array("binary frames are not spoken here: send JSON in text frames".utf8)
            wslay_event_queue_close(ctx, 1003, reason, reason.count)
            wslay_event_shutdown_read(ctx)  // nothing after it is taken
        case UInt8(WSLAY_PONG.rawValue):
            pingOutstanding = false
        case UInt8(WSLAY_CONNECTION_CLOSE.rawValue):
            peerClosed = true  // wslay queued the echo
            if m.msg_length == 1 { failed = true }  // a status code cut short: a protocol error, not a close to echo
        default:
            break  // a ping: wslay queued the pong
        }
    }

    // MARK: Transport

    func received(_ data: UnsafeRawBufferPointer) {
        guard !readEnded else { return }  // the exchange is over: nothing more is read
        input.append(contentsOf: data)
        // Non-zero: a frame wslay could not read (its close would carry no status code).
        if wslay_event_recv(context) != 0 { failed = true }
        if failed {
            wslay_event_shutdown_write(context)
            own.append(SharedBytes(WebSocketFrame.header(.close, length: 2) + [0x03, 0xEA]))  // 1002
        } else {
            _ = wslay_event_send(context)
        }
    }

    /// The exchange is over: a close came (echoed), the peer broke the
    /// protocol, or a binary message was refused — a close frame is sent.
    var readEnded: Bool { failed || wslay_event_get_read_enabled(context) == 0 || wslay_event_get_close_sent(context) != 0 }

    func next() -> FrameDecoder.Frame? {
        guard !messages.isEmpty else { return nil }
        let m = messages.removeFirst()
        queuedBytes -= m.count
        return .line(m)
    }

    var bufferedBytes: Int { input.count - inputStart + queuedBytes + partialBytes }
    var holdsPartial: Bool { messages.isEmpty && partialBytes > 0 }

    func frame(_ message: SharedBytes, into out: inout [SharedBytes]) -> Int {
        let header = message.companion ?? {
            let h = SharedBytes(WebSocketFrame.header(.text, length: message.count))
            message.companion = h
            return h
        }()
        out.append(header)
        out.append(message)
        return header.count + message.count
    }

    func frame(slice: SharedBytes, first: Bool, last: Bool, into out: inout [SharedBytes]) -> Int {
        let header = SharedBytes(WebSocketFrame.header(first ? .text : .continuation, fin: last, length: slice.count))
        out.append(header)
        out.append(slice)
        return header.count + slice.count
    }

    func closing(reason: String) -> [SharedBytes] {
        if !failed && wslay_event_get_close_sent(context) == 0 {
            wslay_event_queue_close(context, WebSocketFrame.closeCode(forBye: reason), nil, 0)
            _ = wslay_event_send(context)
        }
        return takeOwnOutput()
    }

    func takeOwnOutput() -> [SharedBytes] {
        defer { own = [] }
        return own
    }

    /// A ping to a peer that has been silent (a browser cannot send one itself).
    func ping() {
        guard !pingOutstanding, !failed, wslay_event_get_close_sent(context) == 0 else { return }
        pingOutstanding = true
        var msg = wslay_event_msg(opcode: UInt8(WSLAY_PING.rawValue), msg: nil, msg_length: 0)
        wslay_event_queue_msg(context, &msg)
        _ = wslay_event_send(context)
    }
}
