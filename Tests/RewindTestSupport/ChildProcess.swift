import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A program the tests start: posix_spawn with only the descriptors given to it
/// (stdin, stdout, stderr; every other one closed), waited for with a deadline.
///
/// Not Foundation's `Process`: its `waitUntilExit` waits for the end of a socket
/// the child inherits, so a daemon the child leaves behind (the PostgreSQL a
/// script starts) keeps it waiting for ever; and it has no deadline. A test run
/// that hangs costs a whole CI run; one that fails says where.
public final class ChildProcess: @unchecked Sendable {
    public enum Stream: Sendable {
        /// The test process's own descriptor.
        case inherit
        case null
        /// A pipe: the parent's end is `stdinFD`, `stdoutFD` or `stderrFD`.
        case pipe
        /// Appended to the file (created if missing).
        case file(String)
    }

    public struct Timeout: Error, CustomStringConvertible {
        public let description: String
    }

    public let pid: pid_t
    public let path: String
    /// The parent's ends of the pipes asked for (close-on-exec, so no other child inherits them).
    public private(set) var stdinFD: Int32 = -1
    public private(set) var stdoutFD: Int32 = -1
    public private(set) var stderrFD: Int32 = -1
    private var exitStatus: Int32?
    private let lock = NSLock()

    public init(_ path: String, _ args: [String], stdin: Stream = .null, stdout: Stream = .pipe, stderr: Stream = .pipe,
                directory: String? = nil, environment: [String: String]? = nil) throws {
        self.path = path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        func wire(_ stream: Stream, to target: Int32, parentEnd: inout Int32) throws {
            switch stream {
            case .inherit:
                break
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case let .file(name):
                posix_spawn_file_actions_addopen(&actions, target, name, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            case .pipe:
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else { throw Timeout(description: "pipe: errno \(errno)") }
                for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                let (mine, theirs) = target == 0 ? (ends[1], ends[0]) : (ends[0], ends[1])
                parentEnd = mine
                childEnds.append(theirs)
                posix_spawn_file_actions_adddup2(&actions, theirs, target)
            }
        }
        try wire(stdin, to: 0, parentEnd: &stdinFD)
        try wire(stdout, to: 1, parentEnd: &stdoutFD)
        try wire(stderr, to: 2, parentEnd: &stderrFD)
        // After the dup2s: nothing of the test process's but 0, 1 and 2 reaches the child.
        guard let closeFrom = Self.addCloseFrom, closeFrom(&actions, 3) == 0 else {
            throw Timeout(description: "posix_spawn_file_actions_addclosefrom_np is missing (glibc ≥ 2.34)")
        }
        if let directory {
            guard let chdir = Self.addChdir, chdir(&actions, directory) == 0 else {
                throw Timeout(description: "posix_spawn_file_actions_addchdir_np is missing (glibc ≥ 2.29)")
            }
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for e in envp ?? [] { free(e) } }
        var pid: pid_t = 0
        let spawned = envp.map { e in posix_spawn(&pid, path, &actions, nil, argv, e) } ?? posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else {
            for fd in [stdinFD, stdoutFD, stderrFD] where fd >= 0 { close(fd) }
            throw Timeout(description: "cannot run \(path): errno \(spawned)")
        }
        self.pid = pid
    }

    deinit {
        if status == nil {
            kill(pid, SIGKILL)
            _ = wait(timeout: 10)
        }
        for fd in [stdinFD, stdoutFD, stderrFD] where fd >= 0 { close(fd) }
    }

    /// Exit status (the signal's number if one ended it), once it has ended and been waited for.
    public var status: Int32? { lock.withLock { exitStatus } }

    public var isRunning: Bool { wait(timeout: 0) == nil }

    /// Its exit status once it ends, or nil if it is still running after `timeout` seconds.
    @discardableResult
    public func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let s = lock.withLock({ reap() }) { return s }
            if Date() >= deadline { return nil }
            usleep(10_000)
        }
    }

    private func reap() -> Int32? {
        if let exitStatus { return exitStatus }
        var raw: Int32 = 0
        let r = waitpid(pid, &raw, WNOHANG)
        guard r == pid else { return nil }
        let signal = raw & 0x7f
        exitStatus = signal == 0 ? (raw >> 8) & 0xff : signal
        return exitStatus
    }

    public func signal(_ number: Int32) {
        if status == nil { kill(pid, number) }
    }

    /// `number` (SIGTERM by default), then its exit status; one that has not ended after
    /// `timeout` seconds has its threads' stacks taken, is killed, and this throws with them.
    @discardableResult
    public func stop(signal number: Int32 = SIGTERM, timeout: Double = 60) throws -> Int32 {
        signal(number)
        return try finish(timeout: timeout)
    }

    /// Its exit status once it ends; one still running after `timeout` seconds has its threads'
    /// stacks taken, is killed, and this throws with them.
    @discardableResult
    public func finish(timeout: Double) throws -> Int32 {
        if let s = wait(timeout: timeout) { return s }
        let stacks = self.stacks()
        kill(pid, SIGKILL)
        _ = wait(timeout: 10)
        throw Timeout(description: "\(path) (pid \(pid)) had not ended within \(Int(timeout)) s; its threads:\n\(stacks)")
    }

    /// Every thread's stack, by gdb if the machine has it: what a hung child was doing.
    public func stacks() -> String {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") else { return "(no gdb on this machine)" }
        guard let r = try? Self.run("/usr/bin/gdb", ["-p", "\(pid)", "-batch", "-ex", "thread apply all bt"], timeout: 60) else {
            return "(gdb did not run)"
        }
        return String(r.out.suffix(30_000))
    }

    /// Reads the pipes asked for (stdout, stderr) until they end, or the child has ended and they
    /// are drained (a daemon it left behind may hold them open for ever), or the deadline.
    public func readToEnd(timeout: Double) -> (out: String, err: String) {
        var out: [UInt8] = [], err: [UInt8] = []
        var fds = [pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0), pollfd(fd: stderrFD, events: Int16(POLLIN), revents: 0)]
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var ended = false
        while fds.contains(where: { $0.fd >= 0 }) && Date() < deadline {
            // Once it has ended, what it wrote is all in the pipes: read what is there and stop.
            let ready = poll(&fds, 2, ended ? 0 : 100)
            if ready <= 0 {
                if ended { break }
                ended = wait(timeout: 0) != nil
                continue
            }
            for i in 0..<2 where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = read(fds[i].fd, &buffer, buffer.count)
                if n > 0 {
                    if i == 0 { out += buffer[..<n] } else { err += buffer[..<n] }
                } else if n == 0 || errno != EINTR {
                    fds[i].fd = -1
                }
            }
        }
        return (String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    /// Writes `text` to its stdin pipe (all of it, or false).
    @discardableResult
    public func write(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var at = 0
        while at < bytes.count {
            let n = bytes[at...].withUnsafeBytes { Glibc.write(stdinFD, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            at += n
        }
        return true
    }

    public func closeStdin() {
        if stdinFD >= 0 { close(stdinFD) }
        stdinFD = -1
    }

    /// Runs `path` with `args` to its end: its exit status and what it printed (killed after `timeout` s,
    /// and then its status is the signal's number, 9). Stdin is /dev/null unless `input` is given.
    public static func run(_ path: String, _ args: [String], input: String? = nil, directory: String? = nil,
                           environment: [String: String]? = nil, timeout: Double = 300) throws -> (status: Int32, out: String, err: String) {
        let child = try ChildProcess(path, args, stdin: input == nil ? .null : .pipe, directory: directory, environment: environment)
        if let input {
            child.write(input)
            child.closeStdin()
        }
        let deadline = Date().addingTimeInterval(timeout)
        let (out, err) = child.readToEnd(timeout: timeout)
        let status = child.wait(timeout: max(0, deadline.timeIntervalSinceNow)) ?? {
            kill(child.pid, SIGKILL)
            return child.wait(timeout: 10) ?? SIGKILL
        }()
        return (status, out, err)
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    // glibc declares these only under _GNU_SOURCE, which Swift's Glibc module is not built with.
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: AddCloseFrom.self) }
    private static let addChdir: AddChdir? = dlsym(nil, "posix_spawn_file_actions_addchdir_np").map { unsafeBitCast($0, to: AddChdir.self) }
}
