import ArgumentParser
import RewindCore
import RewindStore

extension Admin {
    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a document's content for good: its key, snapshots, editors and title.",
            discussion: """
                The log is append-only and stays as it is: every entry's ops and inverse are sealed
                with the document's own key, and purging destroys that key, so nobody can read them
                again. Snapshots, the list of who edited it last and its title go too. Afterwards
                `verify` reports the document as purged with its chain intact, `replay` and `export`
                refuse it, `undelete` cannot bring it back, and its id stays taken. A document its
                owner has not deleted is deleted in the same step (its terminals are closed).

                `--expired` purges every document deleted more than --deleted-retention-days ago
                (default 30): run it daily (deploy/rewind-purge.timer). Copies of the key in old WAL
                or backups remain until the master key is rotated (`rewind admin rotate-master-key`)
                and the old key file destroyed.

                Exit status: 0 purged (or nothing expired); 1 no such document, or already purged;
                2 usage; 3 the database cannot be reached.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The document id.")
        var doc: String?
        @Flag(help: "Purge every document deleted longer ago than the retention period.")
        var expired = false
        @Option(help: "Days a deleted document is kept for `undelete` (with --expired).")
        var deletedRetentionDays = 30

        func validate() throws {
            if expired == (doc != nil) { throw ValidationError("give a document, or --expired") }
            if deletedRetentionDays < 0 { throw ValidationError("--deleted-retention-days must be 0 or more") }
        }

        func run() throws {
            let database = try doc.map { try db.connect(forDocuments: [$0]) } ?? db.connect()
            do {
                let docs = expired ? try RewindStore.Purge.expired(days: deletedRetentionDays, db: database) : [doc!]
                for d in docs {
                    let p = try RewindStore.Purge.document(d, db: database)
                    print("purged \(d)" + (p.wasLive ? " (it was not deleted: deleted now too)" : ""))
                }
                if expired && docs.isEmpty { print("nothing deleted more than \(deletedRetentionDays) days ago") }
            } catch { throw Failure(error) }
        }
    }

    struct MasterKeyCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "master-key",
            abstract: "Make a master key file, or print a key file's id.",
            subcommands: [Create.self, Show.self])

        struct Create: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Write a new random master key to FILE (mode 0600; an existing file is never overwritten).")
            @Argument(help: "The key file to create.")
            var file: String

            func run() throws {
                do {
                    let key = try MasterKey.create(file)
                    print("created \(file) (key id \(key.id)); back it up apart from the database: without it nothing can be read")
                } catch { throw Failure(error) }
            }
        }

        struct Show: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Print the id of the key in FILE (not the key), to compare with the database's.")
            @Argument(help: "The key file.")
            var file: String

            func run() throws {
                do { print(try MasterKey.read(file).id) } catch { throw Failure(error) }
            }
        }
    }

    struct RotateMasterKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-master-key",
            abstract: "Re-wrap every document's key under a new master key.",
            discussion: """
                Reads the current key (--master-key-file or REWIND_MASTER_KEY_FILE), creates the new
                one at --new-key-file unless that file exists, and in one transaction re-wraps every
                live document's data key under it and records it as the database's master key. Then
                put the new file where the servers read theirs (replace the old file in place, or
                point REWIND_MASTER_KEY_FILE at it): a running server reads its key file again when
                it meets the new key's id; a restarted one needs the new file. Finally destroy the
                old key file and every copy of it: keys wrapped with it, in old WAL or backups —
                a purged document's among them — can then never be opened.

                Exit status: 0 rotated; 1 the current key is not the database's, or the new key is
                the current one; 2 usage; 3 the database cannot be reached.
                """)
        @OptionGroup var db: DatabaseOptions
        @Option(help: "The new master key file (created when missing).")
        var newKeyFile: String

        func run() throws {
            let database = try db.connect()
            let keys = try db.requiredKeys(database)
            do {
                let new = try (try? MasterKey.read(newKeyFile)) ?? MasterKey.create(newKeyFile)
                let n = try keys.rotate(to: new, db: database)
                print("re-wrapped \(n) document key(s) under \(newKeyFile) (key id \(new.id)); now give the servers that file, then destroy the old one")
            } catch let f as Failure { throw f } catch let e as RewindError { throw Failure(e) }
        }
    }
}
