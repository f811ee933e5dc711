import CLibWebSockets

#if canImport(Glibc)
    import Glibc
#endif

/// Owns C memory that lws keeps pointers to for a whole context lifetime (strings, the protocol
/// and extension arrays, mounts, pvo, the retry policy) and frees it all at once.
///
/// Used by one thread at a time: filled before the context exists, freed after it is destroyed.
final class CStorage {
    private var allocations: [UnsafeMutableRawPointer] = []

    /// A NUL-terminated copy of `string` that stays put until `freeAll`.
    func string(_ string: String) -> UnsafePointer<CChar> {
        let copy = strdup(string)!
        allocations.append(UnsafeMutableRawPointer(copy))
        return UnsafePointer(copy)
    }

    /// A zeroed array of `count` values of `T` that stays put until `freeAll`.
    func array<T>(of type: T.Type, count: Int) -> UnsafeMutablePointer<T> {
        let raw = calloc(max(count, 1), MemoryLayout<T>.stride)!
        allocations.append(raw)
        return raw.bindMemory(to: T.self, capacity: max(count, 1))
    }

    /// One zeroed `T` that stays put until `freeAll`.
    func value<T>(_ value: T) -> UnsafeMutablePointer<T> {
        let pointer = array(of: T.self, count: 1)
        pointer.pointee = value
        return pointer
    }

    func freeAll() {
        for allocation in allocations {
            free(allocation)
        }
        allocations = []
    }

    deinit {
        freeAll()
    }
}
