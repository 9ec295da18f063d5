import CLZ4

/// LZ4 block compression (liblz4), for snapshots before they are sealed
/// (`DocumentCipher.sealSnapshot`): sealed text looks random, so PostgreSQL's
/// own compression of large values saves nothing on it, and a snapshot's
/// JSON shrinks several times. Decompressing runs at memory speed: reading
/// a snapshot back costs far less than fetching its uncompressed size.
public enum LZ4 {
    /// `bytes` as one LZ4 block, or nil when LZ4 cannot take that many (over ~2 GB) or it would not shrink.
    public static func compress(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let src = bytes.baseAddress, bytes.count > 0, bytes.count <= Int(LZ4_MAX_INPUT_SIZE) else { return nil }
        let bound = Int(LZ4_compressBound(Int32(bytes.count)))
        let out = [UInt8](unsafeUninitializedCapacity: bound) { out, n in
            n = Int(LZ4_compress_default(src.assumingMemoryBound(to: CChar.self),
                                         UnsafeMutableRawPointer(out.baseAddress!).assumingMemoryBound(to: CChar.self),
                                         Int32(bytes.count), Int32(bound)))
        }
        return out.isEmpty || out.count >= bytes.count ? nil : out
    }

    /// The `count` bytes `block` holds, or nil when it is not one LZ4 block of exactly that many.
    public static func decompress(_ block: UnsafeRawBufferPointer, count: Int) -> [UInt8]? {
        guard let src = block.baseAddress, count > 0, count <= Int(Int32.max), block.count <= Int(Int32.max) else { return nil }
        var ok = false
        let out = [UInt8](unsafeUninitializedCapacity: count) { out, n in
            let got = LZ4_decompress_safe(src.assumingMemoryBound(to: CChar.self),
                                          UnsafeMutableRawPointer(out.baseAddress!).assumingMemoryBound(to: CChar.self),
                                          Int32(block.count), Int32(count))
            ok = Int(got) == count
            n = ok ? count : 0
        }
        return ok ? out : nil
    }
}
