import Foundation
import PinwheelCore

/// CPU used by this process's threads and by the whole machine, read from /proc, so a report can say
/// when the load tool itself, or the machine, was the bottleneck: client-side latencies then include
/// the tool's own queueing or a wait for a core, not only the server's answer.
struct ToolUsage {
    struct Sample {
        var at: ContinuousClock.Instant
        /// Clock ticks of user + system time per thread id.
        var threadTicks: [Int: Double]
        /// Machine-wide clock ticks: idle (with I/O wait) and total.
        var machineIdle: Double
        var machineTotal: Double
    }

    /// Units of the CPU tick counts in /proc.
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// A busiest thread above this share of a core is saturated: its work queues up.
    static let saturatedThreadPercent = 85.0
    /// Less idle CPU than this on the machine means every thread waited for a core now and then.
    static let busyMachineIdlePercent = 10.0

    /// The current sample; nil where /proc is not readable.
    static func sample() -> Sample? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let cpuLine = stat.split(separator: "\n").first, cpuLine.hasPrefix("cpu ")
        else { return nil }
        let fields = cpuLine.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 5 else { return nil }
        let total = fields.prefix(8).reduce(0, +)
        let idle = fields[3] + fields[4]
        var threads: [Int: Double] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            guard let tid = Int(task),
                let text = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                let ticks = ProcStatLine.cpuTicks(text)
            else { continue }
            threads[tid] = ticks
        }
        return Sample(at: .now, threadTicks: threads, machineIdle: idle, machineTotal: total)
    }

    /// The tool's and the machine's use between two samples, with a warning for each bottleneck.
    static func between(_ a: Sample, _ b: Sample) -> LoadReport.Tool {
        let seconds = max(0.001, LoadRunner.seconds(b.at - a.at))
        func percent(_ ticks: Double) -> Double { 100 * ticks / ticksPerSecond / seconds }
        var process = 0.0
        var busiest = 0.0
        for (tid, after) in b.threadTicks {
            let used = after - (a.threadTicks[tid] ?? 0)
            process += used
            busiest = max(busiest, used)
        }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let machineTotal = b.machineTotal - a.machineTotal
        let idlePercent = machineTotal > 0 ? 100 * (b.machineIdle - a.machineIdle) / machineTotal : 100
        return warned(
            LoadReport.Tool(
                cpuPercent: percent(process), busiestThreadPercent: percent(busiest), machineIdlePercent: idlePercent,
                cores: cores, warnings: []))
    }

    /// Several processes of the tool over the same run: their CPU added, the busiest thread of any,
    /// the machine's idle share as they saw it on average.
    static func together(_ tools: [LoadReport.Tool]) -> LoadReport.Tool {
        let count = Double(max(1, tools.count))
        return warned(
            LoadReport.Tool(
                cpuPercent: tools.reduce(0) { $0 + $1.cpuPercent },
                busiestThreadPercent: tools.map(\.busiestThreadPercent).max() ?? 0,
                machineIdlePercent: tools.reduce(0) { $0 + $1.machineIdlePercent } / count,
                cores: tools.first?.cores ?? ProcessInfo.processInfo.activeProcessorCount, warnings: []))
    }

    /// `tool` with a warning for each bottleneck it shows.
    private static func warned(_ tool: LoadReport.Tool) -> LoadReport.Tool {
        var tool = tool
        let (cores, idlePercent) = (tool.cores, tool.machineIdlePercent)
        if tool.busiestThreadPercent >= saturatedThreadPercent {
            tool.warnings.append(
                "pinwheel load's busiest thread used \(Int(tool.busiestThreadPercent.rounded())) % of a core: client-side "
                    + "latencies include its own queueing. Use --processes, fewer clients or a lower --viewport-hz per tool, "
                    + "or run the tool on another machine.")
        }
        if idlePercent < busyMachineIdlePercent {
            tool.warnings.append(
                "the machine had \(Int(idlePercent.rounded())) % of its \(cores) cores idle: the server and the tool "
                    + "waited for cores, and both sides' latencies include that wait.")
        }
        return tool
    }
}
