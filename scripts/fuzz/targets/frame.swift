// libFuzzer target: the WebSocket frame path — bytes from a client, in
// pieces, through `WebSocketTransport` (wslay underneath) to messages, and
// our own frames out — built with the transport's sources, RewindCore and
// SharedBytes in one module (`scripts/fuzz/run frame`).
//
// Input: the first byte chooses how the rest is cut into reads (1 to 256
// bytes each); every read is given to the transport as the connection does,
// then every complete message is taken. Besides not trapping: buffered
// counts never go negative, a message is never over the frame limit, and
// once the exchange has ended (a close, a protocol error) nothing more is taken.

@_cdecl("LLVMFuzzerTestOneInput")
public func rewindFuzzFrame(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let cut = Int(data[0]) + 1
    let limit = 4096
    let ws = WebSocketTransport(maxMessageBytes: limit)
    var offset = 1
    var ended = false
    while offset < size {
        let n = min(cut, size - offset)
        ws.received(UnsafeRawBufferPointer(start: data + offset, count: n))
        offset += n
        while let frame = ws.next() {
            if ended { fatalError("a message taken after the exchange ended") }
            guard case let .line(m) = frame, m.count <= limit else { fatalError("a message over the limit") }
        }
        if ws.bufferedBytes < 0 || ws.partialBytes < 0 { fatalError("negative counts") }
        _ = ws.takeOwnOutput()
        if ws.readEnded { ended = true }
        if offset % 7 == 0 { ws.ping() }
    }
    var out: [SharedBytes] = []
    _ = ws.frame(SharedBytes(Array("{\"re\":1}\n".utf8)), into: &out)
    _ = ws.frame(slice: SharedBytes([1, 2, 3]), first: true, last: false, into: &out)
    _ = ws.closing(reason: "slow")
    return 0
}
