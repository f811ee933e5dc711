import Foundation
import PinwheelCore

/// This process's CPU time, resident memory and open descriptors, read from /proc/self, in the
/// standard Prometheus `process_*` names, so `pinwheel load` (or any scraper) can tell the server's
/// cost per session.
public struct ProcessMetrics: Sendable, Equatable {
    /// User plus system CPU time, seconds.
    public var cpuSeconds: Double
    /// Resident set size, bytes.
    public var residentBytes: Int
    /// Virtual memory size, bytes.
    public var virtualBytes: Int
    /// Open file descriptors (sockets included).
    public var openDescriptors: Int

    /// Reads /proc/self/stat, /proc/self/statm and /proc/self/fd; nil where /proc is missing.
    public static func current() -> ProcessMetrics? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)
        else { return nil }
        guard let cpuTicks = ProcStatLine.cpuTicks(stat) else { return nil }
        let pages = statm.split(separator: " ")
        guard pages.count > 1, let size = Int(pages[0]), let resident = Int(pages[1]) else { return nil }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        return ProcessMetrics(
            cpuSeconds: cpuTicks / ticksPerSecond, residentBytes: resident * pageSize, virtualBytes: size * pageSize,
            openDescriptors: descriptors)
    }

    /// Units of the CPU tick counts in /proc.
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// The figures in Prometheus text exposition format, HELP and TYPE lines included.
    public var prometheusText: String {
        """
        # HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
        # TYPE process_cpu_seconds_total counter
        process_cpu_seconds_total \(cpuSeconds)
        # HELP process_resident_memory_bytes Resident memory size in bytes.
        # TYPE process_resident_memory_bytes gauge
        process_resident_memory_bytes \(residentBytes)
        # HELP process_virtual_memory_bytes Virtual memory size in bytes.
        # TYPE process_virtual_memory_bytes gauge
        process_virtual_memory_bytes \(virtualBytes)
        # HELP process_open_fds Number of open file descriptors.
        # TYPE process_open_fds gauge
        process_open_fds \(openDescriptors)

        """
    }
}
