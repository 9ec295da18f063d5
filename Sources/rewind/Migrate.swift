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
                guard !plain.isEmpty else { return }
                guard let keys = try db.keys(database) else {
                    throw Failure(RewindError(.conflict, "\(plain.count) document(s) hold plain text from before encryption"),
                                  advice: "stop the servers and run `rewind admin migrate --master-key-file FILE` to seal them")
                }
                for doc in plain {
                    let n = try SealExisting.document(doc, keys: keys, db: database)
                    print("sealed \(doc): \(n) entries re-chained")
                }
                try SealExisting.compact(db: database)
                print("sealed \(plain.count) document(s); anchors taken before are superseded (take new ones), and WAL and backups from before still hold plain text")
            } catch let f as Failure { throw f } catch let e as RewindError { throw Failure(e) }
        }
    }
}
