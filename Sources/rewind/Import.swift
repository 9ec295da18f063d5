import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Append documents from an export file to this database, checking their hash chains first.",
            discussion: """
                Two passes. First the whole file is checked without touching the database: each
                document's hash chain is recomputed from the exported columns and every entry is
                replayed through the same code the server runs; a file changed after export, cut
                short, or with entries that do not replay is refused and nothing is imported.
                Then each document is appended in one transaction of its own (all of it or none):
                its users, matched by name (a missing user is created, without a token — say
                `rewind admin user token NAME` to give one), the document with its title, owner
                and roles, then its entries, each batch claiming the document's head as the
                server's appends do.

                A document that already exists here is refused, and nothing is imported; --as NEWID
                imports a file's only document under another id. The hash of an entry covers its
                document id, user id and entry id: when the id differs (--as, which also gives the
                entries new ids, derived from the old ones) or a user's id differs here, the
                entries are re-chained — new hashes, computed after the file's own chain was
                checked — and the command says so; anchors taken on the source do not apply to
                the copy. With the same ids and users, the rows go in exactly as exported, and
                exporting them again gives the same bytes. Servers with the document loaded hear
                of it (NOTIFY rewind_log). Progress goes to stderr on a terminal.

                Exit status: 0 imported; 1 refused (a document exists, the file does not check,
                or the database refused a row: nothing of that document was written); 2 usage;
                3 the database cannot be reached.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "A file written by `rewind admin export`.")
        var file: String
        @Option(name: .customLong("as"), help: "Import the file's only document under this id.")
        var newID: String?

        func run() throws {
            var checking = Progress("checking \(file)", unit: "bytes")
            let headers: [LogExport.Header]
            do { headers = try RewindStore.Import.check(path: file) { checking.update($0, of: $1) } } catch {
                checking.finish()
                throw Failure(error, advice: error.code == .notFound ? "check the file's path" : "export the documents again from the source; the file must be exactly as `rewind admin export` wrote it")
            }
            checking.finish()
            let database = try db.connect()
            let keys = try db.requiredKeys(database)
            var importing = Progress("importing", unit: "entries")
            do {
                try RewindStore.Import.apply(path: file, headers: headers, as: newID, db: database, keys: keys, progress: { importing.update($0, of: $1) }) { done in
                    importing.finish()
                    for user in done.createdUsers {
                        printLine("created user \(user) (without a token: `rewind admin user token \(user)` issues one)")
                    }
                    let rename = done.doc == done.source ? "" : " as \(done.doc)"
                    let chain = done.rechained ? " (re-chained: sealed with the document's own key here, so every hash is new)" : ""
                    printLine("imported \(done.source)\(rename): \(done.entries) entries\(chain)")
                }
            } catch {
                importing.finish()
                throw Failure(error)
            }
        }
    }
}
