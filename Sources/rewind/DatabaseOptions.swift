import ArgumentParser
import RewindCore
import RewindStore

/// Where the database is: shared by every admin command.
struct DatabaseOptions: ParsableArguments {
    @Option(help: "libpq connection string (env REWIND_DATABASE; default: the PG* variables). Unreachable: exit 3.")
    var database: String = env("REWIND_DATABASE") ?? ""

    func connect() throws -> Database {
        do { return try RewindStore.Database(database) } catch { throw Failure(error) }
    }
}
