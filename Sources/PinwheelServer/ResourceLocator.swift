import Foundation

/// Finds the repository's shipped folders (web/, data/) from wherever `pinwheel` runs: next to the
/// executable or one of its ancestors (`.build/release/pinwheel`, `/opt/pinwheel/bin/pinwheel`),
/// else the working directory or one of its ancestors.
public enum ResourceLocator {
    /// The first existing folder named `name` that holds `marker`.
    /// - Parameters:
    ///   - name: folder name, e.g. "web".
    ///   - marker: a file the folder must contain, e.g. "index.html".
    /// - Returns: an absolute path, or nil when none is found.
    public static func folder(named name: String, containing marker: String) -> String? {
        for base in searchBases() {
            var dir = base
            for _ in 0..<6 {
                let candidate = dir.appendingPathComponent(name)
                if FileManager.default.fileExists(atPath: candidate.appendingPathComponent(marker).path) {
                    return candidate.standardizedFileURL.path
                }
                let parent = dir.deletingLastPathComponent()
                if parent.path == dir.path { break }
                dir = parent
            }
        }
        return nil
    }

    private static func searchBases() -> [URL] {
        var bases: [URL] = []
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        if let resolved = Bundle.main.executableURL?.resolvingSymlinksInPath() {
            bases.append(resolved.deletingLastPathComponent())
        }
        bases.append(executable.deletingLastPathComponent())
        bases.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        return bases
    }
}
