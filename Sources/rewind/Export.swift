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
                refers, meta (meta as the exact text stored; ops and inverse opened with the
                document's key: the file holds the content in plain text — keep it as safe as the
                database), time_us (the stored time, microseconds since 1970), hash (hex: the file's
                own chain over these columns, which `import` checks; the database's chain covers
                the sealed text). Snapshots are not written: they are derived from the log. Needs
                the master key; a purged document is refused (exit 1).

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
            let database = try docs.isEmpty ? db.connect() : db.connect(forDocuments: docs)
            let keys = try db.requiredKeys(database)
            let output: LineOutput
            do { output = try LineOutput(path: out) } catch {
                throw Failure(RewindError(.conflict, "\(error)"), advice: "check the path and its folder's permissions")
            }
            do {
                try RewindStore.Export.begin(db: database)
                let names = all ? try RewindStore.Verify.documents(db: database) : docs
                for doc in names { try write(doc, to: output, database, keys) }
                try RewindStore.Export.end(db: database)
                try output.close()
            } catch {
                if let out { unlink(out) }
                if let e = error as? RewindError { throw Failure(e) }
                throw Failure(RewindError(.conflict, "\(error)"), advice: "check the free space and permissions where the export is written")
            }
        }

        private func write(_ doc: String, to output: LineOutput, _ database: Database, _ keys: DocumentKeys) throws {
            var header = try RewindStore.Export.header(doc, to: to, db: database)
            let cipher = try DocumentKeys.cipher(for: doc, keys: keys, db: database)
            // Two passes: the header names the last hash of the file's own
            // chain (over the opened text), known only once every entry was opened.
            var progress = Progress("exporting \(doc)", unit: "entries")
            var first = RewindStore.Export.PlainChain(doc: doc, cipher: cipher)
            try pages(doc, header.seq, database) { for e in $0 { _ = try first.next(e) } }
            header.hash = first.last
            try output.line(JSONWriter.encode(header.json))
            var chain = RewindStore.Export.PlainChain(doc: doc, cipher: cipher)
            try pages(doc, header.seq, database) { entries in
                for e in entries { try output.line(JSONWriter.encode(try chain.next(e).json)) }
                progress.update(entries.last!.row.seq, of: header.seq)
            }
            progress.finish()
        }

        private func pages(_ doc: String, _ stop: Int64, _ database: Database, _ body: ([LogExport.Entry]) throws -> Void) throws {
            var seq: Int64 = 0
            while seq < stop {
                let entries = try RewindStore.Export.entries(doc, afterSeq: seq, toSeq: stop, db: database)
                guard let last = entries.last else {
                    throw RewindError(.internal, "the log of \(doc) ends at entry \(seq) before its head, \(stop)")
                }
                try body(entries)
                seq = last.row.seq
            }
        }
    }
}
