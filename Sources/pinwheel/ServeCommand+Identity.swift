import ArgumentParser
import Dispatch
import Foundation
import Logging
import PinwheelServer
import Synchronization

extension ServeCommand {
    /// `--viewer-key`, `--viewer-key-kind`, `--tenant-column` and `--producer-tokens`.
    func configureIdentity(_ configuration: inout ServerConfiguration, logger: Logger) throws {
        configuration.tenantColumn = tenantColumn
        if let viewerKey {
            let kind = viewerKeyKind.flatMap(ViewerKeys.Kind.init(rawValue:))
            let keys = try Self.blocking { try await ViewerKeys.load(path: viewerKey, kind: kind) }
            configuration.viewerKeys = keys
            logger.info(
                "viewers must authenticate: \(keys.kind.rawValue) key from \(viewerKey), tenant column \(tenantColumn)")
        }
        if let producerTokens {
            let text: String
            do {
                text = try String(contentsOfFile: producerTokens, encoding: .utf8)
            } catch {
                throw ValidationError("--producer-tokens: cannot read \(producerTokens): \(error.localizedDescription)")
            }
            do {
                configuration.producerTokens = try ProducerTokens.parse(text, path: producerTokens)
            } catch {
                throw ValidationError("\(error)")
            }
            logger.info("\(configuration.producerTokens.count) producer tokens limited to a tenant")
        }
    }

    /// Runs async set-up from the synchronous command.
    private static func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await work()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        switch result.withLock({ $0 })! {
        case .success(let value): return value
        case .failure(let error): throw ValidationError("\(error)")
        }
    }
}
