import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin {
    struct Undelete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bring back a document its owner deleted, exactly as it was.",
            discussion: """
                Clears the mark `delete_doc` set: the document is found again by its owner and
                the users it was shared with, on every server instance at once, with every
                version and its undo history (the log was never touched). Only within the
                retention period after the deletion (--deleted-retention-days, default 30).
                `rewind admin undelete --list` shows the deleted documents and when.

                Exit status: 0 brought back (or listed); 1 no such document, not deleted, or
                deleted longer ago than the retention period, or purged; 2 usage; 3 the database cannot
                be reached.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The document id.")
        var doc: String?
        @Option(help: "Days after a deletion during which it can be undone.")
        var deletedRetentionDays = 30
        @Flag(help: "List the deleted documents instead (id, owner, deleted at).")
        var list = false

        func validate() throws {
            if list == (doc != nil) { throw ValidationError("give a document, or --list") }
            if deletedRetentionDays < 0 { throw ValidationError("--deleted-retention-days must be 0 or more") }
        }

        func run() throws {
            let database = try doc.map { try db.connect(forDocuments: [$0]) } ?? db.connect()
            do {
                if list {
                    let rows = try database.query("""
                        SELECT d.id, u.name, to_char(d.deleted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                        FROM documents d JOIN users u ON u.id = d.owner WHERE d.deleted_at IS NOT NULL ORDER BY d.deleted_at, d.id
                        """)
                    for r in rows.values { print("\(r[0] ?? "")\t\(r[1] ?? "")\t\(r[2] ?? "")") }
                    return
                }
                let doc = self.doc!
                let r = try database.query("""
                    SELECT deleted_at IS NOT NULL, deleted_at > now() - make_interval(days => $2::int), purged_at IS NOT NULL
                    FROM documents WHERE id = $1
                    """, [doc, String(deletedRetentionDays)])
                guard r.count == 1 else { throw Failure(.notFound("no document \"\(doc)\""), advice: "check the id: `rewind admin undelete --list` lists the deleted documents") }
                guard r[0, 2] == "f" else {
                    throw Failure(RewindError(.conflict, "\(doc) was purged: its content is erased for good"), advice: "it cannot come back; only a backup taken before the purge, with the master key of that time, holds it")
                }
                guard r[0, 0] == "t" else { throw Failure(RewindError(.conflict, "\(doc) is not deleted"), advice: "nothing to do: its owner and members can open it") }
                guard r[0, 1] == "t" else {
                    throw Failure(RewindError(.conflict, "\(doc) was deleted more than \(deletedRetentionDays) days ago"),
                                  advice: "the retention period is over; give a longer --deleted-retention-days only if your policy allows it")
                }
                _ = try database.query("UPDATE documents SET deleted_at = NULL WHERE id = $1", [doc])
                print("\(doc) is back, as it was")
            } catch let f as Failure { throw f } catch let e as RewindError { throw Failure(e) }
        }
    }
}
