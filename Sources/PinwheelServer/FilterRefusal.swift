import PinwheelCore

/// A filtered index the server refused to build: the indexes in use, plus its estimate, would hold
/// more than `--filter-memory` (``FilterAdmission``).
struct FilterRefusal: Error, Equatable {
    /// The points the filter lets through.
    var points: Int
    /// The bytes its index was estimated to need.
    var estimate: Int
    /// The bytes the indexes in use (and those being built) hold.
    var inUse: Int
    /// `--filter-memory`, in bytes.
    var budget: Int

    /// The `error` a session's `settings` is answered with; the session goes on as it was.
    var wireError: WireError {
        WireError(
            .filterMemory,
            message:
                "the indexes of filtered views in use hold \(Self.mb(inUse)) MB of --filter-memory \(Self.mb(budget)) MB; "
                + "this one (\(points) points) would need about \(Self.mb(estimate)) MB more: the session goes on unchanged"
        )
    }

    /// The reason a session whose token's scope gets no index is closed with (``FilterMemoryClose``),
    /// within the 123 bytes of a close frame.
    var closeReason: String {
        "filter memory full: the token's scope needs about \(Self.mb(estimate)) MB, \(Self.mb(inUse)) of "
            + "\(Self.mb(budget)) MB in use; try again later"
    }

    /// Megabytes with one decimal.
    private static func mb(_ bytes: Int) -> String {
        let tenths = (bytes * 10 + (1 << 19)) >> 20
        return "\(tenths / 10).\(tenths % 10)"
    }
}

/// The close code of a session whose token's scope cannot be given an index within `--filter-memory`:
/// 1013, try again later, as for a server at `--max-sessions`. It is closed rather than served more
/// than its scope, or nothing.
enum FilterMemoryClose {
    static let code: UInt16 = 1013
}
