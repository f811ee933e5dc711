#if canImport(Glibc)
    import Glibc
#endif

/// Reads a whole file into one byte array. `Array(Data(contentsOf:))` holds the file twice while it
/// copies, which for a 10-million-point file is hundreds of MB of peak memory for nothing.
enum FileBytes {
    /// The file's bytes.
    /// - Throws: ``DatasetLoadError/unreadable(file:reason:)`` naming the failing call.
    static func read(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw failure(path, "open") }
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

    private static func failure(_ path: String, _ call: String) -> DatasetLoadError {
        .unreadable(file: path, reason: "\(call): \(String(cString: strerror(errno)))")
    }
}
