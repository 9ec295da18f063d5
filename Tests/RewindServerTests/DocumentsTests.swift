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
}
