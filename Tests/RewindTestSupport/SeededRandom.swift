import RewindCore

/// SplitMix64 (RewindCore's, which the placement simulation uses too): a
/// seeded generator, so a failing property test replays exactly (the same
/// histories on every run). Shared by every test target.
public typealias SeededRandom = SplitMix64
