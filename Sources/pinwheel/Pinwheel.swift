import ArgumentParser
import PinwheelTransport

@main
struct Pinwheel: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Streams clustered map markers to browsers over WebSocket.",
        subcommands: [ServeCommand.self, BenchCommand.self, LoadCommand.self, FeedCommand.self, LogCommand.self]
    )
}
