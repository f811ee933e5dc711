import Foundation

/// One reading of a server's `/metrics` (Prometheus text format), fetched with a plain HTTP/1.0 GET.
public struct MetricsScrape: Sendable {
    /// Sample values by series, e.g. `pinwheel_sessions` or `pinwheel_closes_total{code="1000"}`.
    public var values: [String: Double]
    /// When it was read.
    public var at: ContinuousClock.Instant

    /// The value of a series without labels, or the sum over every label set of `name`.
    public func value(_ name: String) -> Double? {
        if let exact = values[name] { return exact }
        let prefix = name + "{"
        let matching = values.filter { $0.key.hasPrefix(prefix) }
        return matching.isEmpty ? nil : matching.values.reduce(0, +)
    }

    /// The `q` quantile (0 to 1) of histogram `name` over the observations made between `earlier` and
    /// this reading (or since the server started), interpolated linearly within its bucket as
    /// Prometheus's `histogram_quantile` does. A quantile that falls in the `+Inf` bucket is the
    /// largest finite bound. Nil when there were no observations or no buckets.
    public func quantile(_ q: Double, of name: String, since earlier: MetricsScrape? = nil) -> Double? {
        let bounds = buckets(of: name)
        let before = earlier?.buckets(of: name) ?? [:]
        let counts = bounds.keys.sorted().map { (bound: $0, count: bounds[$0]! - (before[$0] ?? 0)) }
        guard let total = counts.last?.count, total > 0 else { return nil }
        let rank = q * total
        var (lower, below) = (0.0, 0.0)
        for (bound, count) in counts {
            if count >= rank {
                guard bound.isFinite else { return lower }
                // Where the rank falls within this bucket, its observations taken as spread evenly.
                return count > below ? lower + (bound - lower) * (rank - below) / (count - below) : bound
            }
            (lower, below) = (bound, count)
        }
        return lower
    }

    /// Histogram `name`'s cumulative bucket counts by upper bound (`+Inf` as infinity).
    private func buckets(of name: String) -> [Double: Double] {
        let prefix = name + "_bucket{"
        var found: [Double: Double] = [:]
        for (series, count) in values where series.hasPrefix(prefix) {
            guard let start = series.range(of: #"le=""#)?.upperBound,
                let end = series[start...].firstIndex(of: "\"")
            else { continue }
            let text = series[start..<end]
            guard let bound = text == "+Inf" ? Double.infinity : Double(text) else { continue }
            found[bound, default: 0] += count
        }
        return found
    }

    /// Parses Prometheus text exposition: `name{labels} value [timestamp]` lines, `#` comments skipped.
    public static func parse(_ text: String, at: ContinuousClock.Instant = .now) -> MetricsScrape {
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            // Label values may hold spaces; the value follows the closing brace (or the name).
            let afterLabels = line.lastIndex(of: "}").map { line.index(after: $0) } ?? line.startIndex
            guard let space = line[afterLabels...].firstIndex(of: " ") else { continue }
            let rest = line[line.index(after: space)...].split(separator: " ")
            guard let first = rest.first, let value = Double(first) else { continue }
            values[String(line[..<space])] = value
        }
        return MetricsScrape(values: values, at: at)
    }

    /// GETs `http://host:port/metrics`.
    /// - Throws: `LoadError.scrapeFailed` naming the URL and what went wrong.
    public static func fetch(host: String, port: Int, timeout: Duration = .seconds(30)) throws(LoadError)
        -> MetricsScrape
    {
        let url = "http://\(host):\(port)/metrics"
        let response: String
        do {
            response = try HTTPExchange.fetch(host: host, port: port, path: "/metrics", timeout: timeout)
        } catch {
            throw .scrapeFailed(url: url, reason: error.reason)
        }
        guard response.hasPrefix("HTTP/1.") else { throw .scrapeFailed(url: url, reason: "not an HTTP response") }
        let status = response.split(separator: " ", maxSplits: 2).dropFirst().first.map(String.init) ?? "?"
        guard status == "200" else { throw .scrapeFailed(url: url, reason: "status \(status)") }
        guard let bodyStart = response.range(of: "\r\n\r\n") else {
            throw .scrapeFailed(url: url, reason: "no end of headers")
        }
        return parse(String(response[bodyStart.upperBound...]))
    }
}
