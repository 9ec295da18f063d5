import ArgumentParser
import RewindCore
import RewindStore

/// Where the database is: shared by every admin command.
struct DatabaseOptions: ParsableArguments {
    @Option(help: "libpq connection string (env REWIND_DATABASE; default: the PG* variables). Unreachable: exit 3.")
    var database: String = env("REWIND_DATABASE") ?? ""

    @Option(help: "The master key file, to read documents' content (env REWIND_MASTER_KEY_FILE). Without it only the hash chain can be checked.")
    var masterKeyFile: String?

    func connect() throws -> Database {
        do { return try RewindStore.Database(database) } catch { throw Failure(error) }
    }

    /// The documents' keys, unwrapped with the master key (nil: no key file
    /// given); a key that is not the database's ends the command.
    func keys(_ db: Database) throws -> DocumentKeys? {
        guard let masterKeyFile = masterKeyFile ?? env("REWIND_MASTER_KEY_FILE") else { return nil }
        do {
            let keys = DocumentKeys(master: try MasterKey.read(masterKeyFile))
            try keys.claimMaster(db)
            return keys
        } catch { throw Failure(error) }
    }

    /// Like `keys`, for a command that cannot work without them.
    func requiredKeys(_ db: Database) throws -> DocumentKeys {
        guard let keys = try keys(db) else {
            throw Failure(RewindError(.badRequest, "this command needs the master key"),
                          advice: "give --master-key-file FILE (or REWIND_MASTER_KEY_FILE): the file the servers use")
        }
        return keys
    }
}
