import XCTest

/// rewind-server's malloc is jemalloc (Package.swift, CJemalloc): linked into
/// the executable, it serves the whole process only while the dynamic linker
/// binds `malloc` to it. A change of link order, or a build without it, would
/// leave glibc's malloc in its place silently but for the start-up log.
final class AllocatorTests: XCTestCase {
    func testTheServerSaysJemallocServesItsMalloc() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--log-level", "info"])
        let line = server.log.split(separator: "\n").first { $0.contains("memory allocator") || $0.contains("jemalloc is linked") }
        XCTAssertNotNil(line, "no word of the allocator at start: \(server.log)")
        XCTAssertTrue(line?.contains("info") == true && line?.contains("malloc=jemalloc 5.") == true, String(line ?? ""))
        XCTAssertFalse(server.log.contains("another malloc serves the process"), server.log)
    }
}
