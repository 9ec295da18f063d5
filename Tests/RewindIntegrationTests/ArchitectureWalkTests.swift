import Foundation
import XCTest

/// docs/architecture.md walks one `submit` through the code ("One submit,
/// walked"), a numbered row per hop, each naming the function it enters as
/// `Sources/<module>/…/File.swift:name`. The code moves under such a table
/// without telling it: this fails when the walk names a file that is gone or
/// a function (method, initializer, subscript, property, case) its file no
/// longer declares, when its rows are no longer numbered 1, 2, 3, …, and when
/// its count of hops and files no longer counts its rows.
final class ArchitectureWalkTests: XCTestCase {
    /// A reference in the walk: where it is ("row 12", or "text" outside the
    /// table's rows), its file from the repository's root, and the name that
    /// file must declare.
    struct Reference {
        var place: String
        var path: String
        var name: String
    }

    static let referencePattern = #"`(Sources/[A-Za-z0-9_+./-]+\.swift):([A-Za-z_][A-Za-z0-9_]*)`"#

    func testEveryFileAndFunctionTheWalkNamesExists() throws {
        let refs = try Self.references(in: walkSection())
        XCTAssertGreaterThanOrEqual(refs.count, 15, "the walk names its functions as `Sources/…/File.swift:name`")
        var texts: [String: String] = [:]
        for ref in refs {
            let full = TestDatabase.repositoryRoot + "/" + ref.path
            guard FileManager.default.fileExists(atPath: full) else {
                XCTFail("docs/architecture.md, \"One submit, walked\", \(ref.place): \(ref.path) does not exist")
                continue
            }
            let text = try texts[ref.path] ?? String(contentsOfFile: full, encoding: .utf8)
            texts[ref.path] = text
            let declared = try Self.declares(text, ref.name)
            if !declared {
                XCTFail("docs/architecture.md, \"One submit, walked\", \(ref.place): \(ref.path) declares no `\(ref.name)`")
            }
        }
    }

    func testTheWalksRowsAreNumberedFromOneInOrder() throws {
        let section = try walkSection()
        let reference = try NSRegularExpression(pattern: Self.referencePattern)
        var numbers: [Int] = []
        for line in section {
            guard let n = Self.rowNumber(line) else { continue }
            numbers.append(n)
            if reference.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) == nil {
                XCTFail("docs/architecture.md, \"One submit, walked\", row \(n): names no function as `Sources/…/File.swift:name`")
            }
        }
        XCTAssertGreaterThanOrEqual(numbers.count, 15, "the walk's table numbers its rows")
        XCTAssertEqual(numbers, Array(1..<(numbers.count + 1)), "the walk's rows are numbered 1, 2, 3, … in order")
    }

    /// "**The counts.** N hops in M distinct files (a in `RewindServer`, …)": the rows, and the files they name.
    func testTheCountsCountTheRows() throws {
        let section = try walkSection()
        let refs = try Self.references(in: section).filter { $0.place != "text" }
        let rows = section.compactMap(Self.rowNumber).count
        let files = Set(refs.map(\.path))
        let text = section.joined(separator: "\n")
        let counts = try NSRegularExpression(pattern: #"\*\*The counts\.\*\* ([0-9]+) hops in ([0-9]+) distinct files \(([^)]*)\)"#)
        let m = try XCTUnwrap(counts.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
                              "the walk says \"**The counts.** N hops in M distinct files (… in `RewindServer`, …)\"")
        func group(_ i: Int) -> String { Range(m.range(at: i), in: text).map { String(text[$0]) } ?? "" }
        XCTAssertEqual(Int(group(1)), rows, "hops: the table's numbered rows")
        XCTAssertEqual(Int(group(2)), files.count, "distinct files: those the rows name")
        let perModule = try NSRegularExpression(pattern: #"([0-9]+) in `([A-Za-z]+)`"#)
        let list = group(3)
        var said: [String: Int] = [:]
        for p in perModule.matches(in: list, range: NSRange(list.startIndex..., in: list)) {
            guard let n = Range(p.range(at: 1), in: list), let module = Range(p.range(at: 2), in: list) else { continue }
            said[String(list[module])] = Int(list[n])
        }
        var counted: [String: Int] = [:]
        for path in files {
            let parts = path.split(separator: "/")
            if parts.count > 1 { counted[String(parts[1]), default: 0] += 1 }
        }
        XCTAssertEqual(said, counted, "files per module")
    }

    // MARK: Reading the walk

    /// The lines of "One submit, walked", from its heading to the next heading of the same or a higher level.
    func walkSection() throws -> [String] {
        let doc = try String(contentsOfFile: TestDatabase.repositoryRoot + "/docs/architecture.md", encoding: .utf8)
        var level: Int?
        var inFence = false
        var section: [String] = []
        for line in doc.components(separatedBy: "\n") {
            if line.hasPrefix("```") { inFence.toggle() }
            let heading = inFence ? nil : Self.headingLevel(line)
            if let start = level {
                if let heading, heading <= start { break }
                section.append(line)
            } else if let heading, line.dropFirst(heading).trimmingCharacters(in: .whitespaces) == "One submit, walked" {
                level = heading
            }
        }
        _ = try XCTUnwrap(level, "docs/architecture.md has a heading \"One submit, walked\"")
        return section
    }

    /// `## Title` → 2; nil for a line that is not a heading.
    static func headingLevel(_ line: String) -> Int? {
        let hashes = line.prefix { $0 == "#" }.count
        guard (1...6).contains(hashes), line.dropFirst(hashes).first == " " else { return nil }
        return hashes
    }

    /// The number in a table row's first cell (`| 12 | … |`); nil for any other line.
    static func rowNumber(_ line: String) -> Int? {
        guard line.hasPrefix("|") else { return nil }
        let cells = line.split(separator: "|", omittingEmptySubsequences: false)
        guard cells.count > 2 else { return nil }
        let first = cells[1].trimmingCharacters(in: .whitespaces)
        guard !first.isEmpty, first.allSatisfy({ $0 >= "0" && $0 <= "9" }) else { return nil }
        return Int(first)
    }

    static func references(in section: [String]) throws -> [Reference] {
        let reference = try NSRegularExpression(pattern: referencePattern)
        var found: [Reference] = []
        for line in section {
            let place = rowNumber(line).map { "row \($0)" } ?? "text"
            for m in reference.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
                guard let path = Range(m.range(at: 1), in: line), let name = Range(m.range(at: 2), in: line) else { continue }
                found.append(Reference(place: place, path: String(line[path]), name: String(line[name])))
            }
        }
        return found
    }

    /// Whether `text` declares `name`: `func name`, `var name`, `let name` or
    /// `case name` (whatever comes around it: `static`, `private`, generic
    /// parameters, `throws`); for `init` and `subscript`, the keyword and its
    /// parameters (`init(`, `init<T>(`, `init?(`), not a call (`.init(`).
    static func declares(_ text: String, _ name: String) throws -> Bool {
        let escaped = NSRegularExpression.escapedPattern(for: name)
        let pattern = name == "init" || name == "subscript"
            ? #"(?<![.\w])"# + escaped + #"\s*[(<?!]"#
            : #"\b(func|var|let|case)\s+"# + escaped + #"\b"#
        let re = try NSRegularExpression(pattern: pattern)
        return re.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }
}
