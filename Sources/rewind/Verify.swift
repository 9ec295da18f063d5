import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the log: no gaps, the hash chain, every inverse, snapshots, anchors.",
            discussion: """
                For each document (all when none is named), entry by entry and through the same
                code the server runs: entries follow on with no gap and versions count the events;
                each entry's hash chains to the one before (the encoding is in docs/architecture.md,
                "The log"); each event applies, and its inverse gives back the state before it; the
                document's head names the last entry and its hash; each snapshot matches its
                digest, the chain at its entry, and the replayed state there. With --anchors, each
                head exported earlier by `rewind admin anchors` must still be in the log with the
                same hash: a history rewritten and re-sealed, or newest entries removed, is caught.

                The content (ops, inverses, snapshots) is sealed with each document's key: without
                --master-key-file only the chain, positions, versions, head and anchors are
                checked (the chain covers the sealed text). With it, each event's sealed ops and
                inverse must open at their own entry (they are bound to the document, the entry's
                position and its id): sealed text moved from another entry, even of the same
                document, is caught although the chain was re-sealed. Entries sealed by releases
                before that binding (bound to the document only) still open anywhere in it; a note
                on stderr counts them (exit 0): `rewind admin migrate --master-key-file FILE`
                binds them. A purged document is reported as purged, its chain checked (exit 0
                when intact).

                Prints the first problem of each document that has one, as
                `DOC entry SEQ (version V): what failed`, and a summary. Progress goes to stderr
                on a terminal.

                Exit status: 0 all holds; 1 a check failed (or a named document does not exist);
                2 usage; 3 the database cannot be reached.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "Documents to check (default: every document).")
        var docs: [String] = []
        @Option(help: "A file of anchors (JSON lines, from `rewind admin anchors`) to check against.")
        var anchors: String?

        func run() throws {
            let database = try docs.isEmpty ? db.connect() : db.connect(forDocuments: docs)
            var kept: [RewindStore.Verify.Anchor] = []
            if let anchors {
                guard let text = readTextFile(anchors) else {
                    throw Failure(RewindError(.badRequest, "cannot read the anchors file \(anchors)"), advice: "give the file `rewind admin anchors > FILE` wrote")
                }
                for (i, line) in text.split(separator: "\n").enumerated() where !line.isEmpty {
                    guard let a = RewindStore.Verify.Anchor.parse(String(line)) else {
                        throw Failure(RewindError(.badRequest, "\(anchors):\(i + 1): not an anchor line {\"doc\", \"seq\", \"hash\"}"),
                                      advice: "give the file `rewind admin anchors > FILE` wrote, unchanged")
                    }
                    kept.append(a)
                }
            }
            var problems = 0
            var missing: [String] = []
            var checked: Int64 = 0
            var chainOnly = 0
            var unbound: [(doc: String, entries: Int64)] = []
            let keys = try db.keys(database)
            do {
                var docs = self.docs.isEmpty ? try RewindStore.Verify.documents(db: database) : self.docs
                for a in kept where !docs.contains(a.doc) && self.docs.isEmpty { docs.append(a.doc) }
                for doc in docs {
                    var progress = Progress("verifying \(doc)", unit: "entries")
                    let result = try RewindStore.Verify.document(doc, anchors: kept, db: database, keys: keys) { progress.update($0, of: $1) }
                    progress.finish()
                    switch result {
                    case let .failure(problem):
                        problems += 1
                        print(problem)
                        if problem.isMissing { missing.append(doc) }
                    case let .success(.chainOnly(purged?, _)):
                        print("\(doc): purged (\(purged)); its chain is intact")
                    case let .success(.chainOnly(nil, n)):
                        chainOnly += 1
                        if n > 0 { unbound.append((doc, n)) }
                    case let .success(.whole(n)):
                        if n > 0 { unbound.append((doc, n)) }
                    }
                    checked += 1
                }
            } catch { throw Failure(error) }
            print(problems == 0 ? "ok: \(checked) document(s) verified" : "FAILED: \(problems) of \(checked) document(s)")
            if chainOnly > 0 {
                printError("note: without the master key only the hash chains were checked (\(chainOnly) document(s)); give --master-key-file to check the content too\n")
            }
            if !unbound.isEmpty {
                let entries = unbound.reduce(0) { $0 + $1.entries }
                let named = unbound.prefix(5).map { "\($0.doc) (\($0.entries))" }.joined(separator: ", ") + (unbound.count > 5 ? ", …" : "")
                printError("""
                    note: \(entries) entries of \(unbound.count) document(s) are sealed in the old form, bound to their document \
                    only — moved within it they would still open, so the checks above cannot tell: \(named). Stop the servers \
                    and run `rewind admin migrate --master-key-file FILE` to bind them to their place (docs/operating.md)

                    """)
            }
            if !missing.isEmpty {
                printError("what to do: \(missing.joined(separator: ", ")) \(missing.count == 1 ? "is" : "are") not in this database: "
                           + "check the name (`rewind admin anchors` lists every document with entries)\n")
            }
            if problems > missing.count {
                printError("""
                    what to do: the log of each document named no longer holds what was written (or a snapshot or head \
                    disagrees with it). Servers refuse to serve a document whose chain breaks; keep this database as it is \
                    for inspection, and restore the document from an export (`rewind admin import FILE --as NEWID`) or a backup.

                    """)
            }
            if problems > 0 { throw ExitCode(ExitStatus.refused) }
        }
    }

    struct Anchors: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print each document's head hash (JSON lines), to keep elsewhere for `verify --anchors`.",
            discussion: """
                One line per document: {"doc", "seq", "hash"} — the newest entry and its hash. Keep
                the output where the database's administrators cannot change it; `rewind admin
                verify --anchors FILE` later proves the log still holds those entries unchanged.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "Documents (default: every document with entries).")
        var docs: [String] = []

        func run() throws {
            let database = try db.connect()
            do {
                for a in try RewindStore.Verify.anchors(docs, db: database) { print(JSONWriter.string(a.json)) }
            } catch { throw Failure(error) }
        }
    }
}
