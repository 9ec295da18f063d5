import Foundation

/// Rewind's words in each language: the package's localization resources
/// (`Resources/<locale>.lproj/Localizable.strings`), read once through
/// Foundation's `Bundle.module`, as an app reads its own.
///
/// Keys are the English strings, so a word no table has reads in English.
/// Titles follow a pattern per locale ("Undo %@", "%@を取り消す"), as
/// NSUndoManager's own strings do; the server's own action names are keyed
/// `action:NAME`, the form they take inside a title ("la saisie"). Adding a
/// locale is adding a folder: every `.lproj` the bundle holds is read.
public struct Localizations: Sendable {
    /// Locale (`ja`, `zh-Hant`) → key → string.
    public let tables: [String: [String: String]]
    /// The package's `defaultLocalization`: what a request for no known locale gets.
    public static let defaultLocale = "en"

    public init(tables: [String: [String: String]]) {
        self.tables = tables
    }

    /// Every `<locale>.lproj/Localizable.strings` under `bundle`'s resources.
    public init(bundle: Bundle) {
        self.init(directory: bundle.resourcePath ?? bundle.bundlePath)
    }

    /// Every `<locale>.lproj/Localizable.strings` under `directory`.
    public init(directory: String) {
        var tables: [String: [String: String]] = [:]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for entry in entries where entry.hasSuffix(".lproj") {
            let locale = Self.canonical(String(entry.dropLast(".lproj".count)))
            if let table = Self.read(directory + "/" + entry + "/Localizable.strings") { tables[locale] = table }
        }
        self.init(tables: tables)
    }

    /// The package's own resources. Built without SwiftPM (the fuzz targets compile the
    /// core's sources alone), there are none, and every word reads as its English key.
    public static let shipped: Localizations = {
        #if SWIFT_PACKAGE
        return Localizations(bundle: Bundle.module)
        #else
        return Localizations(tables: [:])
        #endif
    }()

    /// A locale's folder name as BCP 47 writes it (`zh-hans` → `zh-Hans`, `pt_br` → `pt-BR`):
    /// SwiftPM lower-cases the folders it copies into the bundle.
    public static func canonical(_ tag: String) -> String {
        tag.split(whereSeparator: { $0 == "-" || $0 == "_" }).enumerated().map { i, part in
            if i == 0 { return part.lowercased() }
            if part.count == 4 { return part.prefix(1).uppercased() + part.dropFirst().lowercased() }
            if part.count == 2 { return part.uppercased() }
            return part.lowercased()
        }.joined(separator: "-")
    }

    /// A `.strings` file (the old-style property list format `"key" = "value";`), or nil.
    public static func read(_ path: String) -> [String: String]? {
        guard let data = FileManager.default.contents(atPath: path),
              let table = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: String] else { return nil }
        return table
    }
}
