import Glibc

/// The controlling terminal in raw mode, drawn with ANSI sequences (no curses):
/// the alternate screen while running, and everything as it was on `restore`.
final class Terminal {
    private var saved = termios()
    private var active = false

    /// Set by the SIGWINCH handler; `poll` is interrupted by the signal and the loop looks.
    nonisolated(unsafe) static var resized: sig_atomic_t = 0

    init() throws(Failure) {
        guard isatty(0) == 1, isatty(1) == 1 else {
            throw Failure(.badRequest("rewind connect needs a terminal: stdin and stdout must be a TTY"), advice: "run it in a terminal, not through a pipe")
        }
    }

    var size: (cols: Int, rows: Int) {
        var w = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &w) == 0, w.ws_col > 0, w.ws_row > 0 else { return (80, 24) }
        return (Int(w.ws_col), Int(w.ws_row))
    }

    /// Raw input (no echo, no line editing, Ctrl-S/Ctrl-Q/Ctrl-Z/Ctrl-C as keys), alternate screen, no cursor.
    func enter() {
        tcgetattr(0, &saved)
        var raw = saved
        raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
        raw.c_oflag &= ~tcflag_t(OPOST)
        raw.c_cflag |= tcflag_t(CS8)
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN | ISIG)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        tcsetattr(0, TCSAFLUSH, &raw)
        active = true
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in Terminal.resized = 1 }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0   // no SA_RESTART: poll returns EINTR and the loop redraws
        sigaction(SIGWINCH, &action, nil)
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[2J")
    }

    /// Puts the terminal back as it was: screen, cursor, modes.
    func restore() {
        guard active else { return }
        active = false
        write("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l")
        tcsetattr(0, TCSAFLUSH, &saved)
        signal(SIGWINCH, SIG_DFL)
    }

    func write(_ s: String) {
        var bytes = Array(s.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(1, $0.baseAddress! + off, $0.count - off) }
            if n > 0 { off += n } else if errno != EINTR && errno != EAGAIN { return }
        }
    }

    /// Bytes typed since the last call (stdin is non-blocking in raw mode with VMIN 0).
    func readInput() -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = buf.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        return n > 0 ? Array(buf[..<n]) : []
    }
}
