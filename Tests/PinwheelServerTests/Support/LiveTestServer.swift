import Logging
import PinwheelTestSupport

@testable import PinwheelServer

/// A started server on 127.0.0.1 whose data changes: the test dataset with a change log in a fresh
/// folder, taking changes with `token`. Keep the folder as long as the server.
func startLiveServer(token: String, _ configure: (inout ServerConfiguration) -> Void = { _ in }) throws -> (
    server: Server, folder: FileChangeLogTests.Directory
) {
    let folder = FileChangeLogTests.Directory()
    var configuration = ServerConfiguration(webRoot: TestServer.repositoryRoot + "/web")
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.ingestToken = token
    configure(&configuration)
    var logger = Logger(label: "pinwheel-test")
    logger.logLevel = .warning
    let server = try Server(
        configuration: configuration, dataset: TestServer.dataset, log: FileChangeLog(directory: folder.path),
        logger: logger)
    try server.start()
    return (server, folder)
}
