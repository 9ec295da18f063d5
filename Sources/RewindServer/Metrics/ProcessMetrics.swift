import Glibc
import RewindStore

/// The process's CPU, memory, descriptors and start time, read from
/// `/proc/self` on each scrape, under the names Prometheus's own client
/// libraries use (`process_*`), so dashboards made for any exporter work.
struct ProcessMetrics {
    var cpuSeconds: Double
    var residentBytes: Int
    var virtualBytes: Int
    var openFDs: Int
    var maxFDs: Int
    var startTimeSeconds: Double

    static func read() -> ProcessMetrics {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let page = sysconf(Int32(_SC_PAGESIZE))
        // /proc/self/statm: size resident … in pages.
        let statm = file("/proc/self/statm").split(separator: " ").compactMap { Int($0) }
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return ProcessMetrics(cpuSeconds: cpu,
                              residentBytes: statm.count > 1 ? statm[1] * page : 0,
                              virtualBytes: statm.first.map { $0 * page } ?? 0,
                              openFDs: openDescriptors(),
                              maxFDs: Int(clamping: limit.rlim_cur),
                              startTimeSeconds: startTime())
    }

    var text: String {
        func metric(_ name: String, _ type: String, _ help: String, _ value: String) -> String {
            "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }
        return metric("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", String(cpuSeconds))
            + metric("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", String(residentBytes))
            + metric("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", String(virtualBytes))
            + metric("process_open_fds", "gauge", "Number of open file descriptors.", String(openFDs))
            + metric("process_max_fds", "gauge", "Maximum number of open file descriptors.", String(maxFDs))
            + metric("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", String(startTimeSeconds))
    }

    private static func file(_ path: String) -> String { readTextFile(path) ?? "" }

    private static func openDescriptors() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(dir) }
        var n = 0
        while readdir(dir) != nil { n += 1 }
        return max(0, n - 3)   // ".", "..", and the directory's own descriptor
    }

    /// Field 22 of /proc/self/stat (start time in clock ticks after boot) plus
    /// the boot time from /proc/stat.
    private static func startTime() -> Double {
        let stat = file("/proc/self/stat")
        // The command name (field 2) is in parentheses and may hold spaces: count after it.
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]) else { return 0 }
        let boot = file("/proc/stat").split(separator: "\n").first { $0.hasPrefix("btime ") }
            .flatMap { Double($0.dropFirst(6).trimmingCharacters()) } ?? 0
        return boot + ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

private extension Substring {
    func trimmingCharacters() -> Substring { drop { $0 == " " }.prefix { $0 != " " && $0 != "\n" } }
}
