import ArgumentParser
import Glibc
import RewindCore
import RewindStore

/// `rewind`: the operator's command line.
struct Rewind: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rewind's command-line tools.",
        discussion: """
            `rewind admin --help` lists the admin commands (generated from the commands
            themselves); `rewind admin COMMAND --help` explains one. `rewind connect --help`:
            edit a document live in this terminal.

            Every admin command takes --database CONNINFO (else REWIND_DATABASE, else the PG* variables) and --help. Exit status: 0 ok; 1 a check failed or the database refused (a name taken, a document that exists or does not); 2 usage; 3 the database cannot be reached. Every failure is followed by what to do. Long work (replay, verify, export, import) shows a progress bar on stderr when it is a terminal.
            """,
        subcommands: [Admin.self, Connect.self])
}

struct Admin: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Operate a Rewind database: schema, users, the event log.",
        subcommands: [Migrate.self, Statement.self, Replay.self, Verify.self, Anchors.self, Export.self, Import.self, Tail.self, Follow.self, Stats.self,
                      User.self, SignedTokens.self, APIKey.self, Webhook.self, Grant.self, Revoke.self, Undelete.self, Purge.self, MasterKeyCommand.self, RotateMasterKey.self, Shard.self])
}

do {
    var command = try Rewind.parseAsRoot()
    try command.run()
} catch let f as Failure {
    printError("\(f)\n")
    exit(f.exitCode)
} catch {
    // Usage errors exit 2 (as most Unix tools do), not ArgumentParser's 64.
    if Rewind.exitCode(for: error) == .validationFailure {
        printError(Rewind.fullMessage(for: error) + "\n")
        exit(2)
    }
    Rewind.exit(withError: error)
}
