import Logging
@testable import RewindLoop
@testable import RewindServer
@testable import RewindStore
import XCTest

/// The table of loaded documents (`Documents`), without a database: a
/// runtime is made once per document, kept while in use or while few are
/// loaded, and a runtime replaced since is never dropped in its successor's
/// place. (The store is made but never started: nothing connects.)
final class DocumentsTests: XCTestCase {
    func testRuntimesAreMadeOnceAndDroppedOnlyWhenIdlePastTheBound() {
        let loop = EventLoop()
        let logger = Logger(label: "documents-test")
        let store = EventStore(loop: loop, conninfo: "host=/nonexistent", masterKey: SteppedServer.masterKey, logger: logger)
        var made: [String] = []
        let docs = Documents(keepIdle: 1) { id in
            made.append(id)
            return DocumentRuntime(id: id, store: store, config: ServerConfig(), logger: logger, loop: loop)
        }
        XCTAssertNil(docs["a"])
        let a = docs.runtime("a")
        XCTAssertTrue(docs.runtime("a") === a, "the same runtime while loaded")
        XCTAssertTrue(docs["a"] === a)
        XCTAssertFalse(docs.shouldUnload(a, now: false), "one loaded, up to one idle kept")
        XCTAssertTrue(docs.shouldUnload(a, now: true), "an idle one goes at once when asked to (deleted)")

        let b = docs.runtime("b")
        XCTAssertTrue(docs.shouldUnload(a, now: false), "two loaded: an idle one goes")
        b.opensInFlight = 1
        XCTAssertFalse(docs.shouldUnload(b, now: true), "an open under way keeps it")
        b.opensInFlight = 0

        XCTAssertTrue(docs.remove(a))
        XCTAssertFalse(docs.remove(a), "removed once")
        let again = docs.runtime("a")
        XCTAssertFalse(again === a, "read again when next needed")
        XCTAssertFalse(docs.holds(a))
        XCTAssertFalse(docs.remove(a), "the old runtime does not remove its successor")
        XCTAssertTrue(docs.holds(again))
        XCTAssertEqual(made, ["a", "b", "a"])
        XCTAssertEqual(Set(docs.all.map(\.id)), ["a", "b"])
        XCTAssertFalse(docs.anyPending)
    }

    /// What leaving memory means for prompts and keys is the server's: it is
    /// told once per runtime that goes, never for one still in use or one
    /// replaced since; and after every check, so that a shutdown can finish.
    func testAnIdleRuntimeThatGoesIsReportedOnce() {
        let loop = EventLoop()
        let logger = Logger(label: "documents-test")
        let store = EventStore(loop: loop, conninfo: "host=/nonexistent", masterKey: SteppedServer.masterKey, logger: logger)
        let docs = Documents(keepIdle: 1) { id in DocumentRuntime(id: id, store: store, config: ServerConfig(), logger: logger, loop: loop) }
        var unloaded: [String] = []
        var settled = 0
        docs.onUnloaded = { unloaded.append($0.id) }
        docs.onSettled = { settled += 1 }

        let a = docs.runtime("a")
        docs.mayBeIdle(a)
        XCTAssertEqual(unloaded, [], "one loaded: kept while few are")
        XCTAssertTrue(docs["a"] === a)
        let b = docs.runtime("b")
        b.opensInFlight = 1
        docs.mayBeIdle(b)
        XCTAssertEqual(unloaded, [], "an open under way keeps it, even past the bound")
        docs.mayBeIdle(a)
        XCTAssertEqual(unloaded, ["a"], "two loaded: the idle one goes, and the server is told")
        XCTAssertNil(docs["a"])
        docs.mayBeIdle(a, unloadNow: true)
        docs.unload(a)
        XCTAssertEqual(unloaded, ["a"], "told once")

        let a2 = docs.runtime("a")
        docs.unload(a)
        XCTAssertTrue(docs["a"] === a2, "the old runtime does not unload its successor")
        b.opensInFlight = 0
        docs.mayBeIdle(b, unloadNow: true)
        XCTAssertEqual(unloaded, ["a", "b"], "deleted: it goes as soon as it is idle")
        XCTAssertEqual(settled, 5, "every check is reported, unloading or not")
    }
}
