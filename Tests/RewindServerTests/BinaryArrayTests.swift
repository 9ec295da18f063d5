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
}
