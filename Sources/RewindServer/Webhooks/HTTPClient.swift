import CCurl
import RewindLoop

/// Outbound HTTP POSTs on the loop: libcurl's multi interface driven by
/// libuv, the pairing libcurl documents (its `multi-uv` example): curl says
/// which sockets it waits on and for what (`CURLMOPT_SOCKETFUNCTION`, here
/// one `FDWatcher` each) and when it next needs a turn
/// (`CURLMOPT_TIMERFUNCTION`, one `Timer`); each readiness or timeout is
/// handed back with `curl_multi_socket_action`, and finished transfers are
/// read with `curl_multi_info_read`. Nothing blocks the loop: name lookups
/// run on curl's resolver thread. The only file that sees libcurl.
///
/// A response's body is read and dropped (a receiver that sends gigabytes
/// costs no memory); only its status is kept. Each request has a whole
/// timeout, so a receiver that hangs costs one socket for that long.
final class HTTPClient {
    enum Outcome: Equatable {
        /// The receiver answered with this status.
        case status(Int)
        /// No answer: why (refused, timed out, closed mid-body, …).
        case failed(String)
    }

    private struct Pending {
        let headers: UnsafeMutablePointer<curl_slist>?
        let done: (Outcome) -> Void
    }

    private let loop: EventLoop
    private let multi: UnsafeMutableRawPointer
    private let timer: Timer
    private var watchers: [Int32: FDWatcher] = [:]
    private var pending: [UnsafeMutableRawPointer: Pending] = [:]
    private var closed = false
    static let userAgent = "Rewind-Webhooks/1"

    /// Once per process, before any thread but the loop's could call libcurl.
    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_ALL)) }()

    init(loop: EventLoop) {
        _ = Self.globalInit
        self.loop = loop
        multi = curl_multi_init()!
        timer = Timer(loop: loop)
        let me = Unmanaged.passUnretained(self).toOpaque()
        rewind_curl_multi_pointer(multi, CURLMOPT_SOCKETDATA, me)
        rewind_curl_multi_pointer(multi, CURLMOPT_TIMERDATA, me)
        rewind_curl_multi_socket_function(multi) { _, socket, what, userp, _ in
            Unmanaged<HTTPClient>.fromOpaque(userp!).takeUnretainedValue().watch(socket, what)
            return 0
        }
        rewind_curl_multi_timer_function(multi) { _, timeoutMs, userp in
            Unmanaged<HTTPClient>.fromOpaque(userp!).takeUnretainedValue().schedule(timeoutMs)
            return 0
        }
    }

    var inFlight: Int { pending.count }

    /// POSTs `body` to `url` with `headers`; `done` runs on the loop with the outcome (never if `close` comes first).
    func post(url: String, headers: [(String, String)], body: [UInt8], timeoutMs: Int, done: @escaping (Outcome) -> Void) {
        guard !closed, let easy = curl_easy_init() else { return done(.failed("the HTTP client is closed")) }
        var list: UnsafeMutablePointer<curl_slist>?
        // "Expect:" off: curl would otherwise wait for a 100 Continue before larger bodies.
        for line in headers.map({ "\($0.0): \($0.1)" }) + ["Content-Type: application/json", "Expect:"] {
            list = curl_slist_append(list, line)
        }
        rewind_curl_easy_string(easy, CURLOPT_URL, url)
        rewind_curl_easy_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        rewind_curl_easy_string(easy, CURLOPT_USERAGENT, Self.userAgent)
        rewind_curl_easy_long(easy, CURLOPT_NOSIGNAL, 1)
        rewind_curl_easy_long(easy, CURLOPT_POST, 1)
        rewind_curl_easy_long(easy, CURLOPT_TIMEOUT_MS, timeoutMs)
        rewind_curl_easy_long(easy, CURLOPT_CONNECTTIMEOUT_MS, timeoutMs)
        rewind_curl_easy_slist(easy, CURLOPT_HTTPHEADER, list)
        rewind_curl_easy_long(easy, CURLOPT_POSTFIELDSIZE, body.count)
        body.withUnsafeBytes { b in
            // Copied by curl (COPYPOSTFIELDS), so the array need not outlive this call.
            _ = rewind_curl_easy_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: b.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
        }
        rewind_curl_easy_write_function(easy) { _, size, count, _ in size * count }
        pending[easy] = Pending(headers: list, done: done)
        curl_multi_add_handle(multi, easy)
    }

    /// Abandons every request under way (their `done` is not called) and frees curl's state.
    func close() {
        guard !closed else { return }
        closed = true
        for (easy, p) in pending {
            curl_multi_remove_handle(multi, easy)
            curl_easy_cleanup(easy)
            curl_slist_free_all(p.headers)
        }
        pending = [:]
        curl_multi_cleanup(multi)
        for w in watchers.values { w.close() }
        watchers = [:]
        timer.close()
    }

    // MARK: curl's callbacks (never call back into curl from these)

    private func watch(_ socket: curl_socket_t, _ what: Int32) {
        if what == CURL_POLL_REMOVE {
            watchers.removeValue(forKey: socket)?.close()
            return
        }
        guard let watcher = watchers[socket] ?? FDWatcher(loop: loop, fd: socket) else { return }
        watchers[socket] = watcher
        var events: FDWatcher.Events = []
        if what & CURL_POLL_IN != 0 { events.insert(.readable) }
        if what & CURL_POLL_OUT != 0 { events.insert(.writable) }
        watcher.watch(events) { [unowned self] ready, status in
            var flags: Int32 = 0
            if ready.contains(.readable) { flags |= CURL_CSELECT_IN }
            if ready.contains(.writable) { flags |= CURL_CSELECT_OUT }
            if status < 0 { flags |= CURL_CSELECT_ERR }
            self.act(on: socket, flags)
        }
    }

    private func schedule(_ timeoutMs: Int) {
        guard timeoutMs >= 0 else { return timer.stop() }
        // Even a 0 ms timeout goes through the loop: curl may not be called from its own callback.
        timer.start(after: UInt64(timeoutMs)) { [unowned self] in self.act(on: CURL_SOCKET_TIMEOUT, 0) }
    }

    // MARK: Handing control to curl, and what finished

    private func act(on socket: curl_socket_t, _ flags: Int32) {
        guard !closed else { return }
        var running: Int32 = 0
        curl_multi_socket_action(multi, socket, flags, &running)
        finish()
    }

    private func finish() {
        var left: Int32 = 0
        while !closed, let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = message.pointee.data.result
            var status = 0
            rewind_curl_easy_response_code(easy, &status)
            curl_multi_remove_handle(multi, easy)
            curl_easy_cleanup(easy)
            guard let p = pending.removeValue(forKey: easy) else { continue }
            curl_slist_free_all(p.headers)
            if result == CURLE_OK {
                p.done(.status(status))
            } else {
                p.done(.failed(String(cString: curl_easy_strerror(result))))
            }
        }
    }
}
