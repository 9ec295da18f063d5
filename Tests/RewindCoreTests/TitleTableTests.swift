import Foundation
import RewindLocalizations
import XCTest

@testable import RewindCore

/// Every title in every locale, from the package's localization resources read
/// through Bundle.module, against the table kept beside them.
final class TitleTableTests: XCTestCase {
    static let resources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/RewindLocalizations").path

    func testEveryTitleOfEveryActionInEveryLocaleIsTheTables() throws {
        let table = try String(contentsOfFile: Self.resources + "/ExpectedTitles.tsv", encoding: .utf8)
        var locales = Set<String>(), rows = 0
        for line in table.split(separator: "\n") where !line.hasPrefix("#") {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            XCTAssertEqual(f.count, 4, String(line))
            guard f.count == 4 else { continue }
            XCTAssertEqual(Titles.title(verb: f[1], action: f[2].isEmpty ? nil : f[2], locale: f[0]), f[3], "\(f[0]) \(f[1]) \(f[2])")
            locales.insert(f[0])
            rows += 1
        }
        XCTAssertEqual(locales, Set(Titles.locales), "the table covers exactly the locales the resources provide")
        XCTAssertEqual(Set(Titles.locales), ["en", "ja", "zh-Hans", "zh-Hant", "de", "fr", "es", "ko"], "read through Bundle.module on this platform")
        XCTAssertEqual(rows, locales.count * 2 * 7)
    }

    func testEveryLocaleHasEveryWordEnglishHas() {
        let tables = Wording.shipped.tables
        let english = Set(tables["en"]?.keys.map { $0 } ?? [])
        XCTAssertGreaterThan(english.count, 20)
        for (locale, table) in tables {
            XCTAssertEqual(Set(table.keys), english, "\(locale): missing \(english.subtracting(table.keys).sorted()), extra \(Set(table.keys).subtracting(english).sorted())")
            for (key, value) in table where key.contains("%") {
                XCTAssertEqual(value.components(separatedBy: "%").count, key.components(separatedBy: "%").count, "\(locale) \(key): \(value) has other placeholders")
            }
        }
    }

    /// Adding a locale is adding a folder: one made here, read as the package's are, titles in it with no code.
    func testALocaleAddedAsAResourceFolderOnlyIsServed() throws {
        let dir = NSTemporaryDirectory() + "rewind-locales-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/eo.lproj", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.resources + "/Resources/en.lproj", toPath: dir + "/en.lproj")
        try #"""
        "Undo" = "Malfari";
        "Undo %@" = "Malfari %@n";
        "action:Move" = "movo";
        "Cancel" = "Nuligi";
        """#.write(toFile: dir + "/eo.lproj/Localizable.strings", atomically: true, encoding: .utf8)
        let words = Wording(Localizations(directory: dir))
        XCTAssertEqual(words.locales, ["en", "eo"])
        XCTAssertEqual(words.locale("eo-US"), "eo")
        XCTAssertEqual(words.title(verb: "Undo", action: "Move", locale: "eo"), "Malfari movon")
        XCTAssertEqual(words.title(verb: "Undo", action: nil, locale: "eo"), "Malfari")
        XCTAssertEqual(words.word("Cancel", locale: "eo"), "Nuligi")
        XCTAssertEqual(words.title(verb: "Redo", action: "Move", locale: "eo"), "Redo Move", "a word the locale lacks reads in English")
    }

    func testRequestedTagsFindTheirLocale() {
        for (asked, got) in [("zh-TW", "zh-Hant"), ("zh_HK", "zh-Hant"), ("zh-Hant-CN", "zh-Hant"), ("zh-CN", "zh-Hans"), ("zh", "zh-Hans"),
                             ("ja-JP", "ja"), ("de-AT", "de"), ("fr-CA", "fr"), ("es-419", "es"), ("ko-KR", "ko"), ("pt-BR", "en"),
                             ("", "en"), ("EN-gb", "en")] as [(String, String)] {
            XCTAssertEqual(Titles.locale(asked), got, asked)
        }
        XCTAssertEqual(Titles.locale(nil), "en")
    }

    func testPlaceholdersInsertNamesAsGiven() {
        XCTAssertEqual(Placeholders.fill("%1$@ changes what %2$@ did since", ["Undo %2$@", "a%@"]), "Undo %2$@ changes what a%@ did since")
        XCTAssertEqual(Placeholders.fill("「%1$@」は%2$@", ["x", "y"]), "「x」はy")
        XCTAssertEqual(Placeholders.fill("100%% %@", ["done"]), "100% done")
        XCTAssertEqual(Titles.conflict(Titles.title(verb: "Undo", action: "Move", locale: "ja"), names: ["bob"], locale: "ja"),
                       "「移動を取り消す」は bob がその後に行った変更を変えます")
    }
}
