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

    /// The database holding `docs`: the catalog's own (`home`), or the shard
    /// the catalog places them on (SPEC section 17). Documents on different
    /// shards are refused: run the command once per shard.
    func connect(forDocuments docs: [String]) throws -> Database {
        let catalog = try connect()
        do throws(RewindError) {
            guard try catalog.query("SELECT to_regclass('placements') IS NOT NULL")[0, 0] == "t" else { return catalog }
            var found: [String: String] = [:]
            for doc in docs {
                let s = try ShardCatalog.placement(of: doc, catalog)
                found[s?.name ?? ShardCatalog.home] = s?.conninfo ?? ""
            }
            guard found.count <= 1 else {
                throw RewindError(.badRequest, "these documents are on different shards (\(found.keys.sorted().joined(separator: ", "))): give the documents of one shard at a time")
            }
            guard let (name, conninfo) = found.first, name != ShardCatalog.home else { return catalog }
            return try RewindStore.Database(conninfo)
        } catch { throw Failure(error) }
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
