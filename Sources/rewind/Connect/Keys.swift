/// What a key press means to `rewind connect`.
enum KeyPress: Equatable {
    case text(String)
    case enter, tab, backspace, delete, escape
    case left, right, up, down, home, end
    case f1
    case ctrl(Character)   // "z", "y", "s", "q", "c", …
}

/// Splits raw terminal input into key presses: UTF-8 text, control keys, and
/// the escape sequences of arrows, Home/End and Delete (xterm and VT forms).
/// An escape sequence cut by a read is kept for the next call.
struct KeyDecoder {
    private var held: [UInt8] = []

    mutating func decode(_ input: [UInt8]) -> [KeyPress] {
        let bytes = held + input
        held = []
        var keys: [KeyPress] = []
        var i = 0
        var text: [UInt8] = []
        func flushText() {
            if !text.isEmpty { keys.append(.text(String(decoding: text, as: UTF8.self))); text = [] }
        }
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x1B {
                flushText()
                guard i + 1 < bytes.count else {
                    keys.append(.escape)   // a lone Esc (sequences arrive in one read)
                    i += 1
                    continue
                }
                if bytes[i + 1] == UInt8(ascii: "[") || bytes[i + 1] == UInt8(ascii: "O") {
                    var j = i + 2
                    while j < bytes.count, !(0x40...0x7E).contains(bytes[j]) { j += 1 }
                    guard j < bytes.count else { held = Array(bytes[i...]); break }
                    if let k = Self.sequence(Array(bytes[(i + 2)...j])) { keys.append(k) }
                    i = j + 1
                } else {
                    keys.append(.escape)
                    i += 1
                }
                continue
            }
            switch b {
            case 0x0D, 0x0A: flushText(); keys.append(.enter)
            case 0x09: flushText(); keys.append(.tab)
            case 0x7F, 0x08: flushText(); keys.append(.backspace)
            case 0x01...0x1A: flushText(); keys.append(.ctrl(Character(Unicode.Scalar(b + 0x60))))
            case 0x00...0x1F: break
            default:
                // A UTF-8 character cut by the read waits for its last bytes.
                if b >= 0xC0 {
                    let need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2
                    if i + need > bytes.count { flushText(); held = Array(bytes[i...]); i = bytes.count; continue }
                }
                text.append(b)
            }
            i += 1
        }
        flushText()
        return keys
    }

    private static func sequence(_ s: [UInt8]) -> KeyPress? {
        switch String(decoding: s, as: UTF8.self) {
        case "A": return .up
        case "B": return .down
        case "C": return .right
        case "D": return .left
        case "H", "1~", "7~": return .home
        case "F", "4~", "8~": return .end
        case "3~": return .delete
        case "P", "11~", "[A": return .f1   // xterm, VT, Linux console
        default: return nil
        }
    }
}
