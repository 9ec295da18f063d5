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
            } catch { throw Failure(error) }
        }
    }
}
