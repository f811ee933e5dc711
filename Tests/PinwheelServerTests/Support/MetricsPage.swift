/// A series' value in a `/metrics` page (Prometheus text); nil when absent.
func metricValue(_ metrics: String, _ series: String) -> Double? {
    metrics.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap {
        Double($0.dropFirst(series.count + 1))
    }
}
