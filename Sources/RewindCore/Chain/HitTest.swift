/// Hit-testing as UIKit does it (`hitTest(_:with:)`): the deepest node whose
/// frame contains the point. Frames are in the parent's coordinates, later
/// children are in front, and a node that does not contain the point is not
/// descended into, so a child sticking out of its parent cannot be hit there
/// (whether or not the parent `clips`: as in UIKit, clipping only changes
/// what is drawn). The root stands for the whole canvas: it contains every
/// point, and points are in its coordinates.
extension Document {
    public func hitTest(x: Double, y: Double) -> Key {
        var node = nodes[Document.rootID]!
        var px = x, py = y
        descend: while true {
            for child in node.children.reversed() {
                guard let c = nodes[child], let f = c.frameRect, f.contains(px, py) else { continue }
                px -= f.x
                py -= f.y
                node = c
                continue descend
            }
            return node.id
        }
    }
}

/// A frame as numbers: `[x, y, w, h]`.
public struct FrameRect: Sendable, Equatable {
    public var x, y, w, h: Double

    /// `x <= px < x + w` and `y <= py < y + h` (PROTOCOL.md): an empty frame contains nothing.
    public func contains(_ px: Double, _ py: Double) -> Bool {
        x <= px && px < x + w && y <= py && py < y + h
    }
}

extension Node {
    /// The frame as numbers, or nil if it is not four numbers (ops validate
    /// frames, so this is nil only for a malformed state).
    public var frameRect: FrameRect? {
        guard frame.count == 4, let x = frame[0].doubleValue, let y = frame[1].doubleValue,
              let w = frame[2].doubleValue, let h = frame[3].doubleValue else { return nil }
        return FrameRect(x: x, y: y, w: w, h: h)
    }
}
