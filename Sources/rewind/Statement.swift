import ArgumentParser
import RewindStore

extension Admin {
    /// For `scripts/bench/pgwork`: the statement a writer prepares, exactly as
    /// the server sends it, so the benchmark measures what the server runs.
    struct Statement: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the writers' append statement (for scripts/bench/pgwork).",
            shouldDisplay: false)

        func run() throws {
            print(EventStore.appendStatement)
        }
    }
}
