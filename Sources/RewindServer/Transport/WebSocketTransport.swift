import CWslay
import RewindCore
import RewindLoop

/// JSON over a WebSocket (RFC 6455; PROTOCOL.md "WebSocket and the web"):
/// one request or reply per text frame. The only Swift that calls wslay.
///
/// **In**, wslay's event API does the framing: it unmasks, reassembles
/// fragments (control frames may come between them), checks UTF-8 (1007),
/// the mask and the rules of frames (1002) and the message length (1009),
/// answers pings and echoes a close. It reads from the bytes libuv gave us
/// (`received`) — whole frames only (`WebSocketFrame.wholeFramesEnd`): the
/// rest of a frame waits here. Complete text messages wait in `messages` for
/// the connection's mailbox, as lines wait in a `FrameDecoder`. A binary
/// message is refused with 1003.
///
/// **Out**, data frames are not given to wslay: its queue copies each
/// message, and a push is encoded once for every subscriber. A server frame
/// is unmasked, so its payload is the push's own bytes behind a header of 2
/// to 10 bytes (`WebSocketFrame.header`, cached per message). wslay sends
/// only its control frames (pongs, the close echo, our close and pings),
/// through `takeOwnOutput`.
///
/// **Between messages**, a wslay context is about 8 KiB (its buffers): twice
/// what the rest of an idle connection costs, and freed memory is not given
/// back to the system, so a context must not outlive the read that needed
/// it. Given whole frames, it holds nothing between messages: it is made for
/// a read and given back after it (`rest`), kept only while a message in
/// fragments is arriving or the exchange is closing. (Making one costs about
/// a microsecond, less than parsing the JSON it carries.)
final class WebSocketTransport: Transport {
    private var context: wslay_event_context_ptr?
    private var input: [UInt8] = []
    private var messages: [[UInt8]] = []
    private var own: [SharedBytes] = []
    private var queuedBytes = 0
    // Every WebSocket terminal holds this object: its small fields last, and
    // in 32 bits, so that it is 80 bytes (an allocator size class), not 112.
    // `input` holds at most a frame's rest and one read (a message is at most
    // `maxMessageBytes`, taken as at most 1 GiB): its offsets fit.
    private var inputStart: Int32 = 0
    /// `input` up to here holds whole frames: what wslay may read.
    private var offered: Int32 = 0
    private let maxMessageBytes: Int32
    /// Payload bytes of the message in fragments so far (counted up to 2 GiB, for the partial-bytes bound).
    private var fragmentBytes: Int32 = 0
    /// The frame being read is part of a message (text, binary or continuation), not a control frame.
    private var inDataFrame = false
    /// A message in fragments has begun and not ended: wslay holds its first part.
    private var inFragmentedMessage = false
    private(set) var peerClosed = false
    /// A ping sent and not answered yet (the server's keepalive).
    private(set) var pingOutstanding = false
    /// Set when a pong (or any frame) arrived: the connection counts it as activity.
    private var heardSomething = false
    /// A protocol error wslay closes without a status code (a frame it cannot
    /// read: a control frame over 125 bytes or fragmented; a close payload of
    /// one byte): this server closes with 1002 itself, and wslay sends nothing more.
    private var failed = false
    /// A close was sent or received, or reading stopped: the exchange is over.
    private var over = false

    init(maxMessageBytes: Int) { self.maxMessageBytes = Int32(min(maxMessageBytes, 1 << 30)) }

    deinit { if let context { wslay_event_context_free(context) } }

    /// The wslay context, made when first needed (again after `rest`).
    private var wslay: wslay_event_context_ptr {
        if let context { return context }
        var callbacks = wslay_event_callbacks()
        callbacks.recv_callback = { ctx, buf, len, _, user in
            Unmanaged<WebSocketTransport>.fromOpaque(user!).takeUnretainedValue().readInput(ctx!, into: buf!, max: len)
        }
        callbacks.send_callback = { _, data, len, _, user in
            let me = Unmanaged<WebSocketTransport>.fromOpaque(user!).takeUnretainedValue()
            me.own.append(SharedBytes(Array(UnsafeBufferPointer(start: data, count: len))))
            return len
        }
        callbacks.on_frame_recv_start_callback = { _, arg, user in
            Unmanaged<WebSocketTransport>.fromOpaque(user!).takeUnretainedValue().frameStarted(arg!.pointee)
        }
        callbacks.on_frame_recv_chunk_callback = { _, arg, user in
            let me = Unmanaged<WebSocketTransport>.fromOpaque(user!).takeUnretainedValue()
            if me.inDataFrame { me.fragmentBytes = Int32(clamping: Int(me.fragmentBytes) + arg!.pointee.data_length) }
        }
        callbacks.on_msg_recv_callback = { ctx, arg, user in
            Unmanaged<WebSocketTransport>.fromOpaque(user!).takeUnretainedValue().messageReceived(ctx!, arg!.pointee)
        }
        var made: wslay_event_context_ptr?
        // Held unretained: the connection owns the transport, which frees the context.
        wslay_event_context_server_init(&made, &callbacks, Unmanaged.passUnretained(self).toOpaque())
        wslay_event_config_set_max_recv_msg_length(made, UInt64(maxMessageBytes))
        context = made
        return made!
    }

    private func readInput(_ ctx: wslay_event_context_ptr, into buf: UnsafeMutablePointer<UInt8>, max len: Int) -> Int {
        let available = Int(offered - inputStart)
        guard available > 0 else {
            wslay_event_set_error(ctx, Int32(WSLAY_ERR_WOULDBLOCK.rawValue))
            return -1
        }
        let n = min(len, available)
        input.withUnsafeBufferPointer { buf.update(from: $0.baseAddress! + Int(inputStart), count: n) }
        inputStart += Int32(n)
        return n
    }

    private func frameStarted(_ f: wslay_event_on_frame_recv_start_arg) {
        let data = f.opcode == UInt8(WSLAY_TEXT_FRAME.rawValue) || f.opcode == UInt8(WSLAY_BINARY_FRAME.rawValue)
        let continuation = f.opcode == UInt8(WSLAY_CONTINUATION_FRAME.rawValue)
        inDataFrame = data || continuation
        if data { inFragmentedMessage = f.fin == 0 }
        if continuation && f.fin != 0 { inFragmentedMessage = false }
    }

    private func messageReceived(_ ctx: wslay_event_context_ptr, _ m: wslay_event_on_msg_recv_arg) {
        heardSomething = true
        switch m.opcode {
        case UInt8(WSLAY_TEXT_FRAME.rawValue):
            fragmentBytes = 0
            var bytes = Array(UnsafeBufferPointer(start: m.msg, count: m.msg_length))
            if bytes.last == 0x0A { bytes.removeLast() }  // a trailing newline is allowed and ignored
            if bytes.last == 0x0D { bytes.removeLast() }
            guard !bytes.isEmpty else { return }  // an empty message is ignored, as an empty line is
            queuedBytes += bytes.count
            messages.append(bytes)
        case UInt8(WSLAY_BINARY_FRAME.rawValue):
            fragmentBytes = 0
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

    /// Notes whether the exchange is over, from wslay's state after a call.
    private func noteOver(_ ctx: wslay_event_context_ptr) {
        if failed || wslay_event_get_read_enabled(ctx) == 0 || wslay_event_get_close_sent(ctx) != 0 { over = true }
    }

    // MARK: Transport

    func received(_ data: UnsafeRawBufferPointer) {
        guard !readEnded else { return }  // the exchange is over: nothing more is read
        input.append(contentsOf: data)
        offered = Int32(WebSocketFrame.wholeFramesEnd(input, from: Int(offered), maxPayload: Int(maxMessageBytes)))
        guard offered > inputStart else { return }  // the rest of a frame is still to come
        let ctx = wslay
        // Non-zero: a frame wslay could not read (its close would carry no status code).
        if wslay_event_recv(ctx) != 0 { failed = true }
        if failed {
            over = true
            wslay_event_shutdown_write(ctx)
            own.append(SharedBytes(WebSocketFrame.header(.close, length: 2) + [0x03, 0xEA]))  // 1002
        } else {
            _ = wslay_event_send(ctx)
            noteOver(ctx)
        }
        if inputStart > 0 {  // what wslay read goes; the rest of a frame stays at the front
            input.removeFirst(Int(inputStart))
            offered -= inputStart
            inputStart = 0
        }
        rest()
    }

    /// The exchange is over: a close came (echoed), the peer broke the
    /// protocol, or a binary message was refused — a close frame is sent.
    var readEnded: Bool { over }

    func next() -> FrameDecoder.Frame? {
        guard !messages.isEmpty else { return nil }
        let m = messages.removeFirst()
        if messages.isEmpty { messages = [] }  // its storage goes: an idle terminal kept its hello's (48 B)
        queuedBytes -= m.count
        return .line(m)
    }

    var bufferedBytes: Int { input.count + queuedBytes + Int(fragmentBytes) }
    var holdsPartial: Bool { messages.isEmpty && (input.count > 0 || inFragmentedMessage) }
    var partialBytes: Int { holdsPartial ? input.count + Int(fragmentBytes) : 0 }

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
        if !failed {
            let ctx = wslay
            if wslay_event_get_close_sent(ctx) == 0 {
                wslay_event_queue_close(ctx, WebSocketFrame.closeCode(forBye: reason), nil, 0)
                _ = wslay_event_send(ctx)
            }
            over = true
        }
        return takeOwnOutput()
    }

    func takeOwnOutput() -> [SharedBytes] {
        defer { own = [] }
        return own
    }

    func takeHeardSomething() -> Bool {
        defer { heardSomething = false }
        return heardSomething
    }

    /// A ping to a peer that has been silent (a browser cannot send one itself).
    func keepAlive() {
        guard !pingOutstanding, !over else { return }
        pingOutstanding = true
        let ctx = wslay
        var msg = wslay_event_msg(opcode: UInt8(WSLAY_PING.rawValue), msg: nil, msg_length: 0)
        wslay_event_queue_msg(ctx, &msg)
        _ = wslay_event_send(ctx)
        rest()
    }

    /// Whether anything is held besides the transport itself (a context, bytes, messages, output): nothing, between messages.
    var holdsStorage: Bool { context != nil || input.capacity > 0 || messages.capacity > 0 || own.capacity > 0 }

    /// Holding nothing between messages: the wslay context and the input buffer go.
    func rest() {
        guard let ctx = context, !over, !inFragmentedMessage, input.isEmpty, own.isEmpty,
              wslay_event_want_write(ctx) == 0 else { return }
        wslay_event_context_free(ctx)
        context = nil
        input = []
        inputStart = 0
        offered = 0
    }
}
