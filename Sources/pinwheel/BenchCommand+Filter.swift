import ArgumentParser
import Foundation
import PinwheelCore

extension BenchCommand {
    /// `--filter`: what a filter no session had yet costs a server (the selection of its points, the
    /// copy of them, the build of their index), each part timed over `rounds`, and the bytes of the
    /// filtered index against its share of the full one.
    func measureFilter(_ text: String, dataset: Dataset, full: any Clusterer) throws {
        let expression: FilterExpression
        do {
            expression = try FilterExpression(json: JSONReader.parse(text))
        } catch let error as FilterError {
            throw ValidationError("--filter: \(error)")
        } catch {
            throw ValidationError("--filter is not JSON: \(error)")
        }
        let clock = ContinuousClock()
        func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
            let start = clock.now
            let value = try body()
            return (value, (clock.now - start).ms)
        }
        var rowByRow: [Double] = []
        var selection: [Double] = []
        var copy: [Double] = []
        var build: [Double] = []
        var total: [Double] = []
        var matched = 0
        var index: (any Clusterer)?
        let bound = BoundFilter(expression, columns: dataset.properties.columns)
        let width = dataset.properties.columns.count
        for _ in 0..<rounds {
            // The expression walked row by row, as each change is tested: the reference.
            let (slow, slowMs) = timed {
                var n = 0
                for row in 0..<dataset.count {
                    let cells = dataset.properties.values[row * width..<(row + 1) * width]
                    if bound.matches(PropertyCells(cells)) { n += 1 }
                }
                return n
            }
            let (rows, rowsMs) = timed { dataset.rows(passing: expression) }
            precondition(rows.count == slow, "the column scan and the row walk disagree")
            let (subset, subsetMs) = timed { dataset.filtered(by: expression) }
            let (built, buildMs) = try timed {
                try ClustererFactory.make(algorithm, dataset: subset, options: ClusterOptions(maxClusters: maxClusters))
            }
            rowByRow.append(slowMs)
            selection.append(rowsMs)
            copy.append(subsetMs - rowsMs)
            build.append(buildMs)
            total.append(subsetMs + buildMs)
            matched = rows.count
            index = built
        }
        let share = Double(matched) / Double(max(1, dataset.count))
        let fullBytes = full.estimatedBytes
        let filteredBytes = index?.estimatedBytes ?? 0
        let allowed = share * Double(fullBytes) + 1_048_576
        func figures(_ values: [Double]) -> String {
            let sorted = values.sorted()
            return "median \(fixed(sorted[sorted.count / 2], 1)) ms, max \(fixed(sorted.last!, 1)) ms"
        }
        print("filter \(expression.key): \(matched) of \(dataset.count) points (\(fixed(share * 100, 2)) %)")
        print("\(rounds) rounds (load average \(fixed(BenchCommand.loadAverage(), 2))):")
        print("  selection, column scan over the cores:  " + figures(selection))
        print("  selection, the expression row by row:   " + figures(rowByRow))
        print("  copying the points that pass:           " + figures(copy))
        print("  building their index (\(algorithm.rawValue)):      " + figures(build))
        print("  a never-seen filter in all:             " + figures(total))
        print(
            "bytes: filtered index \(fixed(Double(filteredBytes) / 1_048_576, 2)) MB, full index "
                + "\(fixed(Double(fullBytes) / 1_048_576, 1)) MB; its share plus 1 MB is "
                + "\(fixed(allowed / 1_048_576, 2)) MB: \(Double(filteredBytes) <= allowed ? "within" : "over")")
    }
}
