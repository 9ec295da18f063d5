import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin {
    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply the schema migrations that are missing.",
            discussion: """
                Applies schema/NNN_name.sql in order, each in its own transaction, and records
                them in schema_migrations; running it again applies nothing. The folder is
                --schema, else REWIND_SCHEMA_DIR, else schema/ beside the source checkout.

                A database from before encryption (schema 014) holds documents' content in plain
                text: with the master key (--master-key-file or REWIND_MASTER_KEY_FILE) each such
                document is then sealed with a key of its own and its hash chain computed again (one
                transaction per document; stop the servers first), snapshots are dropped, and the
                tables are rewritten (VACUUM FULL) so no old row version keeps the plain text.
                Anchors taken before are superseded: take new ones (`rewind admin anchors`). WAL
                files and backups from before still hold the plain text: take a new base backup
                and retire the old ones. Without the key the schema is migrated and the command
                says which documents are still plain (exit 1).

                A database sealed by a release before entries were bound to their place holds
                entries sealed for their document only (`~<key id>:…`; a superuser could move one
                within its document unseen). With the master key, and no server running on the
                database, each such document's entries are opened and sealed again bound to their
                document, position and id (`~<key id>.2:…`), and its chain computed again (one
                transaction per document; snapshots dropped; anchors superseded: take new ones).
                Binding makes a move made before it undetectable, as it lies: check the log first
                (`rewind admin verify --anchors FILE`) if anchors were kept. Without the key, or
                with servers running, the schema is migrated and the command warns which documents
                still hold unbound entries (exit 0: they are served as before, and nothing is in
                plain text). Running it again binds nothing more.
                """)
        @OptionGroup var db: DatabaseOptions
        @Option(help: "Folder of NNN_name.sql migrations.")
        var schema: String?

        func run() throws {
            guard let dir = schema ?? Migrations.defaultDirectory(executable: CommandLine.arguments[0]) else {
                throw Failure(RewindError(.notFound, "cannot find the schema folder; pass --schema DIR"))
            }
            let database = try db.connect()
            do {
                let applied = try Migrations.apply(try Migrations.load(from: dir), to: database)
                print(applied.isEmpty ? "schema up to date" : "applied \(applied.joined(separator: ", "))")
                let plain = try SealExisting.documents(db: database)
                let unbound = try SealExisting.unbound(db: database).filter { !plain.contains($0) }
                guard !plain.isEmpty || !unbound.isEmpty else { return }
                let keys = try db.keys(database)
                let servers = try SealExisting.liveInstances(db: database)
                if !plain.isEmpty {
                    guard let keys else {
                        throw Failure(RewindError(.conflict, "\(plain.count) document(s) hold plain text from before encryption"),
                                      advice: "stop the servers and run `rewind admin migrate --master-key-file FILE` to seal them")
                    }
                    guard servers == 0 else { throw Failure(Self.serversRunning(servers, plain.count, "hold plain text from before encryption")) }
                    for doc in plain {
                        let n = try SealExisting.document(doc, keys: keys, db: database)
                        print("sealed \(doc): \(n.entries) entries re-chained")
                    }
                    try SealExisting.compact(db: database)
                    print("sealed \(plain.count) document(s); anchors taken before are superseded (take new ones), and WAL and backups from before still hold plain text")
                }
                guard !unbound.isEmpty else { return }
                guard let keys, servers == 0 else {
                    // Not an error: they are served and verified as before; only a move within a document goes unseen.
                    let named = unbound.prefix(10).joined(separator: ", ") + (unbound.count > 10 ? ", …" : "")
                    printError("""
                        warning: \(unbound.count) document(s) hold entries sealed before entries were bound to their place \
                        (moved within their document, they would still open): \(named). \
                        \(keys == nil ? "Give the master key" : "\(servers) server instance(s) are running on this database: stop them"), \
                        then run `rewind admin migrate --master-key-file FILE` again to bind them.

                        """)
                    return
                }
                for doc in unbound {
                    let n = try SealExisting.document(doc, keys: keys, db: database)
                    print("bound \(doc): \(n.bound) entries sealed again at their place, \(n.entries) re-chained")
                }
                print("bound \(unbound.count) document(s); anchors taken before are superseded (take new ones: `rewind admin anchors`)")
            } catch let f as Failure { throw f } catch let e as RewindError { throw Failure(e) }
        }

        /// Re-chaining a document under a server that holds it would leave that server appending after a hash that is gone.
        static func serversRunning(_ n: Int, _ docs: Int, _ what: String) -> RewindError {
            RewindError(.conflict, "\(docs) document(s) \(what), and \(n) server instance(s) are running on this database: stop them, then run `rewind admin migrate` again")
        }
    }
}
