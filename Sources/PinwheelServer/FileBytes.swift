#if canImport(Glibc)
    import Glibc
#endif

/// Reads files for the dataset parsers: whole into one byte array, or piece by piece.
/// `Array(Data(contentsOf:))` would hold a file twice while it copies, which for a 10-million-point
/// file is hundreds of MB of peak memory for nothing.
enum FileBytes {
    /// The file's bytes.
    /// - Throws: ``DatasetLoadError/unreadable(file:reason:)`` naming the failing call.
    static func read(_ path: String) throws -> [UInt8] {
        let fd = try open(path)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(path, "fstat") }
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + done, size - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw failure(path, n == 0 ? "read (file shrank)" : "read") }
            done += n
        }
        return bytes
    }

    /// Hands the file to `body` in pieces of at most `pieceSize` bytes, reusing one buffer.
    /// - Returns: the file's size in bytes, known before the first piece (for capacity hints).
    /// - Throws: ``DatasetLoadError/unreadable(file:reason:)``, or what `body` throws.
    static func forEachPiece(
        _ path: String, pieceSize: Int = 8 << 20, sizeKnown: (Int) -> Void = { _ in },
        _ body: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        let fd = try open(path)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(path, "fstat") }
        sizeKnown(Int(info.st_size))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pieceSize, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            let n = Glibc.read(fd, buffer.baseAddress!, pieceSize)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw failure(path, "read") }
            if n == 0 { return }
            try body(UnsafeBufferPointer(start: buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), count: n))
        }
    }

    private static func open(_ path: String) throws -> Int32 {
        let fd = Glibc.open(path, O_RDONLY)
        guard fd >= 0 else { throw failure(path, "open") }
        return fd
    }

    private static func failure(_ path: String, _ call: String) -> DatasetLoadError {
        .unreadable(file: path, reason: "\(call): \(String(cString: strerror(errno)))")
    }
}
