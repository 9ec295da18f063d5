import Foundation
import XCTest

/// The tests' way of running programs never waits for ever: a CI run that hangs
/// costs the whole run and says nothing, a test that fails says where.
final class ChildProcessTests: XCTestCase {
    /// Foundation's Process waited for ever here (its end-of-child socket is held by what the child leaves behind).
    func testAProgramThatLeavesADaemonHoldingItsOutputIsDoneWhenItEnds() throws {
        let start = Date()
        let r = try ChildProcess.run("/bin/sh", ["-c", "echo before; sleep 20 & echo after >&2; exit 3"], timeout: 15)
        XCTAssertEqual(r.status, 3)
        XCTAssertEqual(r.out, "before\n")
        XCTAssertEqual(r.err, "after\n")
        XCTAssertLessThan(Date().timeIntervalSince(start), 5, "waited for the daemon's end of the pipe")
    }

    func testAChildThatIgnoresTheStopIsKilledAndItsStacksAreReported() throws {
        let child = try ChildProcess("/bin/sh", ["-c", "trap '' TERM; echo ready; while :; do sleep 1; done"], stdout: .pipe, stderr: .null)
        var ready = [UInt8](repeating: 0, count: 6)
        XCTAssertEqual(read(child.stdoutFD, &ready, 6), 6)   // the trap is set
        XCTAssertThrowsError(try child.stop(timeout: 1)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("had not ended within 1 s"), text)
            if FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") {
                XCTAssertTrue(text.contains("Thread 1"), "gdb's stacks: \(text)")
            }
        }
        XCTAssertEqual(child.status, SIGKILL, "killed after the deadline")
    }

    func testOnlyStandardDescriptorsReachTheChild() throws {
        // A descriptor not close-on-exec (as every one Foundation opens), numbered where `ls` opens none of its own.
        XCTAssertEqual(dup2(2, 900), 900)
        defer { close(900) }
        let r = try ChildProcess.run("/bin/sh", ["-c", "ls /proc/self/fd"])
        let fds = r.out.split(separator: "\n").compactMap { Int32($0) }
        XCTAssertTrue(fds.contains(1), "the listing: \(r.out) \(r.err)")
        XCTAssertFalse(fds.contains(900), "the child got \(fds)")
    }
}
