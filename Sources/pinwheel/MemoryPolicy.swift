#if canImport(Glibc)
    import Glibc
#endif

/// How the C allocator returns memory, set once before a server builds its index.
enum MemoryPolicy {
    /// Blocks of this size or more get pages of their own, which go back to the kernel when freed.
    static let ownPagesFrom: Int32 = 1 << 20

    /// glibc raises its mmap threshold each time a large block is freed (up to 32 MB), after which an
    /// index's large arrays come from the heap, whose holes keep their pages: with live data every
    /// compaction's build and every freed index generation left RSS higher (1M points, 500 viewers,
    /// 10,000 changes/s: 1.9–2.3 GB after 60 s against 1.3 GB with the threshold fixed). `mallopt` is not
    /// in Swift's Glibc module, so it is looked up by name; where it is missing nothing changes.
    static func returnLargeBlocksToTheKernel() {
        #if canImport(Glibc)
            typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
            guard let symbol = dlsym(nil, "mallopt") else { return }
            let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
            let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD in <malloc.h>
            _ = mallopt(mmapThreshold, ownPagesFrom)
        #endif
    }
}
