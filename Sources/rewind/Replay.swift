import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin {
    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rebuild a document from the log and print its state as JSON.",
            discussion: """
                Replays the events of DOC from version 1 up to --to (default: the head) through
                the same code the server runs, and prints {"doc", "version", "state"}; `state`
                is exactly what `open` returns at that version. Progress goes to stderr on a
                terminal.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The document id.")
        var doc: String
        @Option(parsing: .unconditional, help: "Stop at this version (0 = empty document).")
        var to: Int64?

        func validate() throws {
            if let to, to < 0 { throw ValidationError("--to must be 0 or more (0 = the empty document)") }
        }

        func run() throws {
            let database = try db.connect(forDocuments: [doc])
            let keys = try db.keys(database)
            var progress = Progress("replaying \(doc)", unit: "events")
            do {
                let ledger = try RewindStore.Replay.document(doc, to: to, db: database, keys: keys) { progress.update($0, of: $1) }
                progress.finish()
                print(JSONWriter.string(.obj([("doc", .string(doc)), ("version", .int(ledger.version)), ("state", ledger.document.json)])))
            } catch where error.code == .version {
                throw Failure(error, advice: "give --to between 0 and the document's head: `rewind admin replay \(doc)` without --to prints the head's version")
            } catch { throw Failure(error) }
        }
    }
}
