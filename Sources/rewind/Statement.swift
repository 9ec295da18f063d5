import ArgumentParser
import RewindStore

extension Admin {
    /// For `scripts/bench/pgwork`: the statement a writer prepares, exactly as
    /// the server sends it, so the benchmark measures what the server runs.
    struct Statement: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the writers' append statement (for scripts/bench/pgwork).",
            shouldDisplay: false)

        @Flag(help: "The statement of a batch that also notes editors (schema/025); without it, that of a batch that notes none, as pgwork's are.")
        var noting = false

        func run() throws {
            print(EventStore.appendStatement(noting: noting))
        }
    }
}
