import Glibc

/// A progress bar for long work, on stderr, only when stderr is a terminal
/// (a script reading our output, or a log file, gets none of it):
///
///     exporting d  [##########..........]  52%  520,000/1,000,000 entries  81,234/s  ETA 0:06
///
/// Redrawn at most ten times a second, so a fast loop does not spend its time
/// writing to the terminal; `finish` clears the line.
struct Progress {
    let label: String
    let unit: String
    let enabled: Bool
    private let started: Double
    private var lastDrawn = -1.0

    init(_ label: String, unit: String, enabled: Bool = isatty(2) == 1) {
        self.label = label
        self.unit = unit
        self.enabled = enabled
        started = Self.now()
    }

    mutating func update(_ done: Int64, of total: Int64) {
        guard enabled else { return }
        let t = Self.now()
        guard t - lastDrawn >= 0.1 || done >= total else { return }
        lastDrawn = t
        printError("\r" + Self.line(label: label, unit: unit, done: done, total: total, seconds: t - started) + "\u{1B}[K")
    }

    func finish() {
        if enabled { printError("\r\u{1B}[K") }
    }

    /// The bar's text: pure, so its layout can be read without a terminal.
    static func line(label: String, unit: String, done: Int64, total: Int64, seconds: Double) -> String {
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let width = 20
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let eta = rate > 0 && done < total ? clock(Double(total - done) / rate) : "-:--"
        return "\(label)  [\(bar)]  \(Int(fraction * 100))%  \(grouped(done))/\(grouped(total)) \(unit)  \(grouped(Int64(rate)))/s  ETA \(eta)"
    }

    /// 1234567 as "1,234,567".
    static func grouped(_ n: Int64) -> String {
        let digits = Array(String(n.magnitude))
        var out = ""
        for (i, d) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(d)
        }
        return (n < 0 ? "-" : "") + out
    }

    /// Seconds as "m:ss" (or "h:mm:ss").
    static func clock(_ seconds: Double) -> String {
        let s = Int(seconds.rounded(.up))
        let two = { (n: Int) in n < 10 ? "0\(n)" : "\(n)" }
        return s >= 3600 ? "\(s / 3600):\(two(s / 60 % 60)):\(two(s % 60))" : "\(s / 60):\(two(s % 60))"
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
