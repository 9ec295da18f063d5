import ArgumentParser
import Glibc
import RewindCore
import RewindStore

extension Admin {
    struct Grant: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a user a role on a document: editor or viewer.",
            discussion: """
                As the owner's `share` request does. An editor reads, edits and undoes its own
                groups; a viewer reads only. The change takes effect at once on every server
                instance. The owner (the document's creator) keeps its role.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The document id.")
        var doc: String
        @Argument(help: "The user's name.")
        var user: String
        @Argument(help: "editor or viewer.")
        var role: GrantedRole

        enum GrantedRole: String, ExpressibleByArgument, CaseIterable {
            case editor, viewer
        }

        func run() throws {
            let r = Role(rawValue: role.rawValue)!
            let database = try db.connect(forDocuments: [doc]), catalog = try db.connect()
            do throws(RewindError) {
                try ShardCatalog.copyUser(named: user, from: catalog, to: database)
                _ = try AccessRows.share(doc: doc, user: user, role: r, db: database)
            } catch { throw Failure(error) }
            print("\(user) is now \(r.rawValue) of \(doc)")
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take a user's role on a document away.",
            discussion: """
                Terminals of that user with the document open get {"push":"closed","doc":…,
                "reason":"forbidden"} at once, on every server instance; the document is then
                `not_found` for them. The owner's role cannot be taken away.
                """)
        @OptionGroup var db: DatabaseOptions
        @Argument(help: "The document id.")
        var doc: String
        @Argument(help: "The user's name.")
        var user: String

        func run() throws {
            let database = try db.connect(forDocuments: [doc])
            do { _ = try AccessRows.share(doc: doc, user: user, role: nil, db: database) } catch { throw Failure(error) }
            print("\(user) has no role on \(doc) now")
        }
    }
}
