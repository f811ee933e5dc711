/// The fields Pinwheel reads from a line of Linux's /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat
/// (proc(5)). Parsing only: the server's process metrics and the load tool's thread usage read the
/// files themselves.
public enum ProcStatLine {
    /// utime + stime, in clock ticks (`sysconf(_SC_CLK_TCK)` per second), of a process or a thread.
    /// - Returns: nil when the line does not have the fields.
    public static func cpuTicks(_ line: String) -> Double? {
        // The command name in parentheses may hold spaces; fields are counted after its ")".
        guard let close = line.lastIndex(of: ")") else { return nil }
        let fields = line[line.index(after: close)...].split(separator: " ")
        // After ")": state is field 3 of proc(5), so utime (14) and stime (15) sit at offsets 11 and 12.
        guard fields.count > 12, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        return utime + stime
    }
}
