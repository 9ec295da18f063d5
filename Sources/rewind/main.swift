import ArgumentParser
import Glibc
import RewindCore
import RewindStore

/// `rewind`: the operator's command line.
struct Rewind: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rewind's command-line tools.",
        subcommands: [Admin.self])
}

struct Admin: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Operate a Rewind database: schema, users, the event log.",
        subcommands: [Migrate.self, Replay.self, Verify.self, Anchors.self, Export.self, Import.self, Tail.self, Stats.self,
                      User.self, Grant.self, Revoke.self])
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
