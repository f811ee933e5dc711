import Foundation
import Testing

@testable import PinwheelCore

@Suite("Protocol document")
struct ProtocolDocumentTests {
    /// Every message in the document's json code blocks: a line starting with `{"type"` opens one,
    /// indented lines continue it.
    func examples() throws -> [String] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/protocol.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        var messages: [String] = []
        var inBlock = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inBlock = line == "```json"
                continue
            }
            guard inBlock else { continue }
            if line.hasPrefix("{\"type\"") {
                messages.append(String(line))
            } else if line.hasPrefix(" "), !messages.isEmpty {
                messages[messages.count - 1] += line
            }
        }
        return messages
    }

    @Test("every example message in docs/protocol.md decodes under the rules it documents")
    func examplesDecode() throws {
        let messages = try examples()
        #expect(messages.count >= 10)
        let clientTypes = ["viewport", "ack", "expand", "settings", "held", "ping", "children", "leaves"]
        for text in messages {
            // `auth` is read by the server module before a session's machine sees anything: its fields.
            if text.hasPrefix(#"{"type":"auth""#) {
                guard case .object(let auth)? = try? JSONReader.parse(text) else {
                    Issue.record("not a JSON object: \(text)")
                    continue
                }
                let token: Bool = if case .string? = auth["token"] { true } else { false }
                let exp: Bool = if case .number? = auth["exp"] { true } else { false }
                #expect(token != exp, "\(text)")
                continue
            }
            // `children` and `leaves` name a request and its answer: the answer carries what was asked for.
            let isAnswer =
                (text.hasPrefix(#"{"type":"children""#) && text.contains(#""features":"#))
                || (text.hasPrefix(#"{"type":"leaves""#) && text.contains(#""points":"#))
            let isClient = !isAnswer && clientTypes.contains { text.hasPrefix("{\"type\":\"\($0)\"") }
            #expect(throws: Never.self, "\(text)") {
                if isClient { _ = try ClientMessage.decode(text) } else { _ = try ServerMessage.decode(text) }
            }
        }
    }
}
