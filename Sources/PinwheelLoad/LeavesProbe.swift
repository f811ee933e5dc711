import Foundation
import PinwheelCore
import PinwheelTransport
import Synchronization

import struct Histogram.Histogram

/// One more viewer beside the tour that opens clusters' member lists (`pinwheel load --leaves-probe`):
/// it asks for a first page of 100 of a cluster's points (`leaves`) and times each from the request to
/// its answer, which is what a person clicking a cluster waits while the others tour.
///
/// Its own thread drives it: a view at one of the tour's cities at zoom 2, 5, 8, 11 or 14, its batches
/// acknowledged, then a first page of up to five of its clusters, one at a time ``spacing`` apart. A
/// page the server turns away as `rate-limited` is asked again after its `retryMs` and timed from the
/// asking again, as the page's client does.
final class LeavesProbe: WebSocketClientDelegate, @unchecked Sendable {
    /// Between one page's answer and the next request: under the server's default rate for these
    /// requests (10 a second, bursts of 4), so few are turned away.
    static let spacing: Duration = .milliseconds(120)
    /// Longest the probe waits for any answer before it gives up.
    static let answerTimeout: Duration = .seconds(10)
    static let zooms: [Double] = [2, 5, 8, 11, 14]

    private struct Inbox {
        var connection: ConnectionID?
        var messages: [[UInt8]] = []
        var gone: String?
    }

    private let inbox = Mutex(Inbox())
    private let arrived = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let client: WebSocketClient
    private let options: LoadOptions
    // Written by the probe's thread alone, read after `done`.
    private var pages = Histogram<UInt64>(highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    private var refused: [String: Int] = [:]
    private var failure: String?

    /// Connects now and probes from `from` until `until`, on a thread of its own.
    init(options: LoadOptions, from: ContinuousClock.Instant, until: ContinuousClock.Instant) {
        self.options = options
        var configuration = WebSocketClientConfiguration()
        configuration.permessageDeflate = options.deflate
        configuration.allowSelfSignedCertificates = true
        client = WebSocketClient(configuration: configuration)
        let thread = Thread { [self] in
            defer { done.signal() }
            do {
                try probe(from: from, until: until)
            } catch {
                failure = "\(error)"
            }
            client.stop()
        }
        thread.name = "pinwheel-leaves-probe"
        thread.start()
    }

    /// A probe over the steady part of a run starting now, when `options` asks for one.
    static func start(_ options: LoadOptions) -> LeavesProbe? {
        guard options.leavesProbe else { return nil }
        let steady = ContinuousClock.now + options.ramp
        return LeavesProbe(options: options, from: steady, until: steady + options.duration)
    }

    /// Waits for the probe's thread to end and sums up what it measured.
    func finish() -> LoadReport.Leaves {
        done.wait()
        return LoadReport.Leaves(pageMs: .init(pages, divisor: 1000), refused: refused, error: failure)
    }

    private struct ProbeError: Error, CustomStringConvertible {
        var description: String
    }

    private func probe(from: ContinuousClock.Instant, until: ContinuousClock.Instant) throws(ProbeError) {
        let url: WebSocketURL
        do { url = try WebSocketURL(options.url) } catch { throw ProbeError(description: "bad URL \(options.url)") }
        let origin = options.origin ?? "\(url.secure ? "https" : "http")://\(url.hostHeader)"
        let connection: ConnectionID
        do {
            try client.start(delegate: self)
            connection = try client.connect(to: options.url, subprotocol: WireEncoding.json.rawValue, origin: origin)
        } catch {
            throw ProbeError(description: "cannot connect: \(error)")
        }
        // Waits for `hello`, then for the tour's steady part.
        _ = try next(until: .now + Self.answerTimeout) { if case .hello = $0 { true } else { false } }
        Thread.sleep(forTimeInterval: max(0, LoadRunner.seconds(from - .now)))
        var random = SplitMix64(seed: options.seed ^ 0x1EAF_E5)
        var seq: UInt64 = 0
        var req: UInt64 = 0
        while ContinuousClock.now < until {
            let city = TourCities.all[Int(random.next() % UInt64(TourCities.all.count))]
            let zoom = Self.zooms[Int(random.next() % UInt64(Self.zooms.count))]
            seq += 1
            let view = TourViewport(
                x: Mercator.x(lon: city.lon), y: Mercator.y(lat: city.lat), zoom: zoom, width: options.width,
                height: options.height)
            send(view.message(seq: Int(seq)), to: connection)
            var shown: [FeatureID: WireFeature] = [:]
            _ = try next(until: .now + Self.answerTimeout) { message in
                guard case .batch(let batch) = message else { return false }
                for id in batch.remove { shown[id] = nil }
                for f in batch.add + batch.update { shown[f.id] = f }
                send(.ack(AckMessage(batch: batch.batch, applied: batch.add.count, ms: 0.1)), to: connection)
                return batch.done && batch.seq == seq
            }
            let clusters = shown.values.filter { $0.count > 1 && $0.id >> 32 != 0 }.map(\.id).sorted().prefix(5)
            for id in clusters where ContinuousClock.now < until {
                Thread.sleep(forTimeInterval: LoadRunner.seconds(Self.spacing))
                try page(of: id, req: &req, connection: connection)
            }
        }
    }

    /// Asks for a first page of cluster `id` until it is answered or refused for good; times the asking
    /// that was answered.
    private func page(of id: FeatureID, req: inout UInt64, connection: ConnectionID) throws(ProbeError) {
        while true {
            req += 1
            let asked = req
            let sent = ContinuousClock.now
            send(.leaves(LeavesRequest(id: id, req: asked)), to: connection)
            let answer = try next(until: sent + Self.answerTimeout) { message in
                switch message {
                case .leaves(let page): page.req == asked
                case .error(let e): e.req == asked
                default: false
                }
            }
            guard case .error(let e) = answer else {
                _ = pages.record(UInt64(LoadClient.micros(ContinuousClock.now - sent)))
                return
            }
            refused[e.code.rawValue, default: 0] += 1
            guard e.code == .rateLimited else { return }
            Thread.sleep(forTimeInterval: Double(e.retryMs ?? 100) / 1000)
        }
    }

    private func send(_ message: ClientMessage, to connection: ConnectionID) {
        client.send(Array(message.json.utf8), to: connection)
    }

    /// The first message from now on that `wanted` takes, acknowledging the batches of a refresh on
    /// the way (a live server refreshes the probe's view too).
    private func next(
        until deadline: ContinuousClock.Instant, _ wanted: (ServerMessage) -> Bool
    ) throws(ProbeError) -> ServerMessage {
        while true {
            let (messages, gone) = inbox.withLock { box in
                defer { box.messages.removeAll() }
                return (box.messages, box.gone)
            }
            for bytes in messages {
                let message: ServerMessage
                do { message = try ServerMessage.decode(bytes) } catch {
                    throw ProbeError(description: "undecodable message: \(error)")
                }
                if wanted(message) { return message }
            }
            if let gone { throw ProbeError(description: gone) }
            let left = deadline - .now
            guard left > .zero, arrived.wait(timeout: .now() + LoadRunner.seconds(left)) == .success else {
                throw ProbeError(description: "no answer in \(Self.answerTimeout)")
            }
        }
    }

    // MARK: WebSocketClientDelegate (lws service thread)

    func webSocketClient(
        _ client: WebSocketClient, didOpen connection: ConnectionID, subprotocol: String?, connectTime: Duration
    ) {
        inbox.withLock { $0.connection = connection }
    }

    func webSocketClient(
        _ client: WebSocketClient, didReceive message: [UInt8], binary: Bool, from connection: ConnectionID
    ) {
        inbox.withLock { $0.messages.append(message) }
        arrived.signal()
    }

    func webSocketClient(_ client: WebSocketClient, didClose connection: ConnectionID, code: CloseCode, reason: String)
    {
        inbox.withLock { $0.gone = "closed by the server: \(code.rawValue) \(reason)" }
        arrived.signal()
    }

    func webSocketClient(_ client: WebSocketClient, didFailToConnect connection: ConnectionID, error: String) {
        inbox.withLock { $0.gone = "could not connect: \(error)" }
        arrived.signal()
    }
}
