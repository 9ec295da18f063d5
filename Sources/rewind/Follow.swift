import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin {
    struct Follow: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Follow the whole log by position: one JSON line per entry, none skipped, none twice.",
            discussion: """
                Prints every entry committed after --after (a position; 0: from the start) as one
                JSON object a line — {position, doc, version, entry, kind, user, client, time, ops}
                — in position order, then waits for more. A position only grows in the order
                entries become visible: run it again with --after the last position printed and
                nothing is missed or printed twice, even when two servers committed out of order
                (docs/api.md, "Following the log"). Ops are opened with the master key
                (--master-key-file or REWIND_MASTER_KEY_FILE); without it, or for a purged
                document, `ops` is left out. --doc-prefix keeps the documents whose id starts
                with it. --caught-up stops once there is nothing more to read (for scripts).

                Exit status: 2 usage; 3 the database cannot be reached or the connection is lost
                (run it again with --after).
                """)
        @OptionGroup var db: DatabaseOptions
        @Option(help: "The position already seen (0: from the start).")
        var after: Int64 = 0
        @Option(help: "Only documents whose id starts with this.")
        var docPrefix: String?
        @Flag(help: "Stop once caught up instead of waiting for more.")
        var caughtUp = false

        func validate() throws {
            if after < 0 { throw ValidationError("--after must be 0 or more") }
        }

        func run() throws {
            let database = try db.connect()
            let keys = RewindStore.Follow.Keys(try db.keys(database))
            var position = after
            do {
                try database.listen("rewind_log")
                while true {
                    let page = try RewindStore.Follow.page(after: position, prefix: docPrefix, limit: 1_000, keys: keys, db: database)
                    for e in page.entries { printLine(JSONWriter.string(e.json)) }
                    position = page.next
                    if page.entries.count == 1_000 { continue }
                    if caughtUp { return }
                    // A notice says a head moved; the horizon may also move without one (a transaction
                    // elsewhere ended): look again at least every 200 ms.
                    _ = try database.nextNotice(timeoutMs: 200)
                }
            } catch { throw Failure(error) }
        }
    }
}
