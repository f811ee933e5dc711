import PinwheelCore
import Testing

@Suite("/proc stat lines")
struct ProcStatLineTests {
    @Test("CPU ticks read from a stat line, whose name may hold spaces and parentheses")
    func cpuTicks() {
        let line = "4242 (pinwheel (load) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 3 0 12345"
        #expect(ProcStatLine.cpuTicks(line) == 281)
        #expect(ProcStatLine.cpuTicks("garbage") == nil)
    }
}
