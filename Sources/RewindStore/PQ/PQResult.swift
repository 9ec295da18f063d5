import CLibPQ
import Glibc
import RewindCore

/// Rows of a result, as text (libpq's text format).
public struct Rows: Sendable {
    public var columns: [String]
    public var values: [[String?]]

    public var count: Int { values.count }
    public subscript(row: Int, column: Int) -> String? { values[row][column] }
    public func int(_ row: Int, _ column: Int) -> Int64? { values[row][column].flatMap { Int64($0) } }
}

/// The rows of a result read in place (libpq's text format): a cell is
/// made a `String` only when asked for one, and numbers and hashes are read
/// from its bytes. For the log's pages, where making every cell a `String`
/// (and an array per row) was a fifth of reading them (perf, replay).
/// Owns the result; freed with it.
public final class ResultRows: @unchecked Sendable {  // read-only after init; handed from the reading thread to the decoding one at most once
    private let result: OpaquePointer
    let count: Int

    init(_ result: OpaquePointer) {
        self.result = result
        count = Int(PQntuples(result))
    }

    deinit { PQclear(result) }

    subscript(row: Int) -> Row { Row(result: result, row: Int32(row)) }

    /// Every cell as text (`Rows`).
    var text: Rows { PQ.rows(result) }

    struct Row {
        fileprivate let result: OpaquePointer
        fileprivate let row: Int32

        /// The cell's bytes (nil: NULL), valid while the result is.
        func withBytes<R>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
            guard PQgetisnull(result, row, Int32(column)) == 0, let p = PQgetvalue(result, row, Int32(column)) else { return nil }
            let n = Int(PQgetlength(result, row, Int32(column)))
            return p.withMemoryRebound(to: UInt8.self, capacity: n) { body(UnsafeBufferPointer(start: $0, count: n)) }
        }
    }
}

/// A failed statement: SQLSTATE and the server's message.
public struct SQLFailure: Error, Sendable, CustomStringConvertible {
    public let sqlstate: String
    public let message: String
    /// The constraint that refused the statement, when one did (a unique index's name, say).
    public var constraint: String? = nil
    public var description: String { "\(sqlstate): \(message)" }

    /// A unique index refused a row: `23505`, and which one.
    public func isUniqueViolation(of index: String) -> Bool { sqlstate == "23505" && constraint == index }
}

enum PQ {
    static func rows(_ r: OpaquePointer) -> Rows {
        let nrows = Int(PQntuples(r)), ncols = Int(PQnfields(r))
        var columns: [String] = []
        for c in 0..<ncols { columns.append(string(PQfname(r, Int32(c)))) }
        var values: [[String?]] = []
        values.reserveCapacity(nrows)
        for i in 0..<nrows {
            var row: [String?] = []
            row.reserveCapacity(ncols)
            for c in 0..<ncols {
                if PQgetisnull(r, Int32(i), Int32(c)) != 0 {
                    row.append(nil)
                } else {
                    let p = PQgetvalue(r, Int32(i), Int32(c))!
                    let n = Int(PQgetlength(r, Int32(i), Int32(c)))
                    row.append(p.withMemoryRebound(to: UInt8.self, capacity: n) {
                        String(decoding: UnsafeBufferPointer(start: $0, count: n), as: UTF8.self)
                    })
                }
            }
            values.append(row)
        }
        return Rows(columns: columns, values: values)
    }

    static func failure(_ r: OpaquePointer?, conn: OpaquePointer?) -> SQLFailure {
        let state = r.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { string($0) } ?? ""
        var message = r.flatMap { PQresultErrorMessage($0) }.map { string($0) } ?? ""
        if message.isEmpty, let conn { message = string(PQerrorMessage(conn)) }
        let constraint = r.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "n"))) }.map { string($0) }
        return SQLFailure(sqlstate: state, message: message.trimmingSpace, constraint: constraint)
    }

    static func string(_ p: UnsafePointer<CChar>?) -> String {
        guard let p else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: strlen(p)), as: UTF8.self)
    }

    /// Calls `body` with libpq's parameter arrays for `params` (values,
    /// lengths, formats; a NULL value for nil), alive for the call.
    static func withParams<R>(_ params: [PipelineConnection.Statement.Param],
                              _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R) -> R
    {
        var values: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        for p in params {
            switch p {
            case let .text(s):
                values.append(s.map { strdup($0)! })
                lengths.append(0)
                formats.append(0)
            case let .binary(b):
                let m = malloc(max(1, b.count))!.assumingMemoryBound(to: CChar.self)
                b.withUnsafeBytes { if $0.count > 0 { memcpy(m, $0.baseAddress!, $0.count) } }
                values.append(m)
                lengths.append(Int32(b.count))
                formats.append(1)
            }
        }
        defer { values.forEach { free($0) } }
        let ptrs = values.map { UnsafePointer($0) }
        return ptrs.withUnsafeBufferPointer { v in
            lengths.withUnsafeBufferPointer { l in formats.withUnsafeBufferPointer { f in body(v.baseAddress, l.baseAddress, f.baseAddress) } }
        }
    }
}

extension String {
    var trimmingSpace: String {
        var s = Substring(self)
        while let c = s.last, c == "\n" || c == " " { s.removeLast() }
        return String(s)
    }
}

extension RewindError {
    static func storage(_ what: String) -> RewindError {
        RewindError(.unavailable, "storage unavailable: \(what); retry later")
    }
}
