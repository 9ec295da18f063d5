import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin {
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write documents' logs as JSON lines: a header per document, then every entry with every stored column.",
            discussion: """
                For each document: one header line {"document", "title", "owner", "created_us",
                "access": [{"user", "role"}], "users": [{"id", "name"}], "entries", "seq",
                "version", "hash"} — the users are those its entries, owner and members name, and
                seq/version/hash are the last entry written — then one line per log entry (event or
                group mark) in log order, with every column of the `log` table: doc, seq, version,
                entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops, inverse,
                refers, meta (ops, inverse and meta as the exact text stored), time_us (the stored
                time, microseconds since 1970), hash (hex). Snapshots are not written: they are
                derived from the log.

                Everything is read from one snapshot of the database (a REPEATABLE READ
                transaction), so servers may keep writing meanwhile. The same rows always give
                the same bytes. `rewind admin import FILE` reads the file back into a database.
                Progress goes to stderr on a terminal.

                Exit status: 0 written; 1 a document does not exist or the output cannot be
                written (a partial --out file is removed); 2 usage; 3 the database cannot be reached.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "Documents to export.")
        var docs: [String] = []
        @Flag(help: "Export every document.")
        var all = false
        @Option(parsing: .unconditional, help: "Export each document up to this version (its events up to it and the marks that follow them).")
        var to: Int64?
        @Option(help: "Write to this file instead of standard output.")
        var out: String?

        func validate() throws {
            if docs.isEmpty && !all { throw ValidationError("name the documents to export, or pass --all") }
            if !docs.isEmpty && all { throw ValidationError("pass either documents or --all, not both") }
            if let to, to < 0 { throw ValidationError("--to must be 0 or more") }
        }

        func run() throws {
            let database = try db.connect()
            let output: LineOutput
            do { output = try LineOutput(path: out) } catch {
                throw Failure(RewindError(.conflict, "\(error)"), advice: "check the path and its folder's permissions")
            }
            do {
                try RewindStore.Export.begin(db: database)
                let names = all ? try RewindStore.Verify.documents(db: database) : docs
                for doc in names { try write(doc, to: output, database) }
                try RewindStore.Export.end(db: database)
                try output.close()
            } catch {
                if let out { unlink(out) }
                if let e = error as? RewindError { throw Failure(e) }
                throw Failure(RewindError(.conflict, "\(error)"), advice: "check the free space and permissions where the export is written")
            }
        }

        private func write(_ doc: String, to output: LineOutput, _ database: Database) throws {
            let header = try RewindStore.Export.header(doc, to: to, db: database)
            try output.line(JSONWriter.encode(header.json))
            var progress = Progress("exporting \(doc)", unit: "entries")
            var seq: Int64 = 0
            while seq < header.seq {
                let entries = try RewindStore.Export.entries(doc, afterSeq: seq, toSeq: header.seq, db: database)
                guard let last = entries.last else {
                    throw RewindError(.internal, "the log of \(doc) ends at entry \(seq) before its head, \(header.seq)")
                }
                for e in entries { try output.line(JSONWriter.encode(e.json)) }
                seq = last.row.seq
                progress.update(seq, of: header.seq)
            }
            progress.finish()
        }
    }
}
