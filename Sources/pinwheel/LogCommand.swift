import ArgumentParser
import Foundation
import PinwheelServer

/// `pinwheel log`: what an operator runs on a file change log's folder (the server stopped).
struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Check or repair the change log in a --data-dir (stop the server first).",
        subcommands: [Check.self, Repair.self]
    )

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the snapshots and segments in a data folder, their versions and any damage.",
            discussion: """
                Reads every file and changes nothing. Exit status: 0 nothing damaged; 1 damaged, and a \
                start refuses (see `pinwheel log repair`); 2 damaged, and a start recovers by itself \
                without losing an acknowledged change (a torn tail it cuts, a damaged snapshot it \
                passes over).
                """)

        @Option(help: "The server's --data-dir.")
        var dataDir: String

        func run() throws {
            let check = try LogCommand.check(dataDir)
            print(check.report)
            switch check.verdict {
            case .intact: return
            case .refused: throw ExitCode(1)
            case .recoverable: throw ExitCode(2)
            }
        }
    }

    struct Repair: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cut a damaged data folder back to its intact part, so that the server starts.",
            discussion: """
                Without --yes it only shows what it would keep and what would be lost. With --yes it \
                moves damaged snapshots, and every record from the first damage that breaks the run of \
                versions on, into DIR/damaged-<time>/ (nothing is deleted), and cuts the segment \
                there. Acknowledged changes after the damage are lost: run it on purpose, after \
                copying the folder.
                """)

        @Option(help: "The server's --data-dir.")
        var dataDir: String

        @Flag(help: "Do it; without this, only show what would happen.")
        var yes = false

        func run() throws {
            let check = try LogCommand.check(dataDir)
            print(check.repairReport)
            guard !check.removals.isEmpty else { return }
            guard yes else {
                print("nothing changed: run again with --yes to do it")
                return
            }
            do {
                let aside = try check.repair()
                print("done: moved into \(aside)")
            } catch {
                throw ValidationError("repair failed: \(error)")
            }
        }
    }

    static func check(_ directory: String) throws -> LogFolderCheck {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
        else { throw ValidationError("--data-dir \(directory) is not a folder") }
        do {
            return try LogFolderCheck(directory: directory)
        } catch {
            throw ValidationError("cannot read \(directory): \(error)")
        }
    }
}
