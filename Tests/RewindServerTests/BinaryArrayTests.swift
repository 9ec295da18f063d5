@testable import RewindStore
import XCTest

/// The binary array parameters the append sends (`BinaryArray`), byte for byte.
final class BinaryArrayTests: XCTestCase {
    /// A uuid's text becomes its 16 bytes, whatever the case of its digits;
    /// text that is no uuid keeps the length its digits make, so PostgreSQL
    /// refuses it rather than taking 16 bytes of something else.
    func testUUIDsAreTheirSixteenBytesAndOthersAreNot() {
        var a = BinaryArray(.uuid)
        a.append(uuid: "0123abcd-4567-89ef-ABCD-0123456789aB")
        a.append(uuid: "not-a-uuid-but-sixteen+")  // its hex digits a, d, b, e, e: two bytes and a half
        a.append(uuid: "00112233445566778899aabbccddeeff00")  // 17 bytes
        let b = a.finish()
        func int32(_ at: Int) -> Int32 { b[at..<(at + 4)].reduce(0) { $0 << 8 | Int32($1) } }
        XCTAssertEqual(int32(0), 1)  // one dimension
        XCTAssertEqual(int32(8), 2950)  // uuid
        XCTAssertEqual(int32(12), 3)  // elements
        var at = 20
        XCTAssertEqual(int32(at), 16)
        XCTAssertEqual(Array(b[(at + 4)..<(at + 20)]),
                       [0x01, 0x23, 0xAB, 0xCD, 0x45, 0x67, 0x89, 0xEF, 0xAB, 0xCD, 0x01, 0x23, 0x45, 0x67, 0x89, 0xAB])
        at += 20
        XCTAssertEqual(int32(at), 2)
        XCTAssertEqual(Array(b[(at + 4)..<(at + 6)]), [0xAD, 0xBE])
        at += 6
        XCTAssertEqual(int32(at), 17)
        XCTAssertEqual(b[(at + 4)...].first, 0x00)
        XCTAssertEqual(b.count, at + 4 + 17)
    }

    /// Texts, nulls and integers read back as they went in, however far the
    /// buffer grew past its first size (a batch's ops can be megabytes), and
    /// the header counts them and says whether there is a null.
    func testElementsReadBackAcrossTheBufferGrowing() {
        var rng = SystemRandomNumberGenerator()
        var texts: [String?] = ["", "é", String(repeating: "x", count: 100_000), nil]
        for _ in 0..<2_000 { texts.append(Bool.random(using: &rng) ? nil : String(repeating: "ab", count: Int.random(in: 0..<40, using: &rng))) }
        var a = BinaryArray(.text, capacity: 8)
        for t in texts { a.append(t) }
        let b = a.finish()
        func int32(_ at: Int) -> Int32 { b[at..<(at + 4)].reduce(0) { $0 << 8 | Int32($1) } }
        XCTAssertEqual(int32(4), 1)  // has nulls
        XCTAssertEqual(int32(8), 25)  // text
        XCTAssertEqual(Int(int32(12)), texts.count)
        var at = 20
        var read: [String?] = []
        while at < b.count {
            let n = Int(int32(at))
            at += 4
            if n < 0 { read.append(nil); continue }
            read.append(String(decoding: b[at..<(at + n)], as: UTF8.self))
            at += n
        }
        XCTAssertEqual(read, texts)

        var ints = BinaryArray(.int8)
        let values: [Int64] = [0, -1, 1, .max, .min] + (0..<500).map { _ in Int64.random(in: .min ... .max, using: &rng) }
        for v in values { ints.append(v) }
        let c = ints.finish()
        XCTAssertEqual(c.count, 20 + values.count * 12)
        XCTAssertEqual(c[4..<8].reduce(0) { $0 << 8 | Int32($1) }, 0)  // no nulls
        for (i, v) in values.enumerated() {
            let at = 20 + 12 * i + 4
            XCTAssertEqual(c[at..<(at + 8)].reduce(Int64(0)) { $0 << 8 | Int64($1) }, v)
        }
    }
}
