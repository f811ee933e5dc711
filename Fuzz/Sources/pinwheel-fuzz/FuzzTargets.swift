import PinwheelCore

/// What each fuzz target checks beyond "does not crash".
enum FuzzTargets {
    /// Decoding never traps; what decodes encodes to a message that decodes to the same thing.
    static func clientMessage(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let message = try? ClientMessage.decode(bytes) else { return }
        guard let again = try? ClientMessage.decode(message.json), again == message else {
            fatalError("\(message) did not survive encode then decode: \(message.json)")
        }
    }

    static func jsonReader(_ bytes: UnsafeBufferPointer<UInt8>) {
        _ = try? JSONReader.parse(bytes)
    }

    static func csv(_ bytes: UnsafeBufferPointer<UInt8>) {
        let data = Array(bytes)
        _ = try? CSVParser.parse(data, badRows: .skip)
        _ = try? CSVParser.parse(data)
    }

    static func geoJSON(_ bytes: UnsafeBufferPointer<UInt8>) {
        _ = try? GeoJSONParser.parseFeatureCollection(Array(bytes), badRows: .skip)
    }

    /// The streamed NDJSON reader, fed in two pieces, agrees with the whole-buffer one.
    static func ndjson(_ bytes: UnsafeBufferPointer<UInt8>) {
        let data = Array(bytes)
        let whole = try? GeoJSONParser.parseNDJSON(data, badRows: .skip)
        var stream = NDJSONStream(badRows: .skip)
        let cut = data.isEmpty ? 0 : Int(data[0]) % (data.count + 1)
        let streamed: ParsedDataset? = data.withUnsafeBufferPointer { all in
            do {
                try stream.feed(UnsafeBufferPointer(rebasing: all[..<cut]))
                try stream.feed(UnsafeBufferPointer(rebasing: all[cut...]))
                return try stream.finish()
            } catch {
                return nil
            }
        }
        if (whole == nil) != (streamed == nil) || whole?.dataset.count != streamed?.dataset.count {
            fatalError("NDJSON read whole and streamed disagree (cut at \(cut))")
        }
    }

    /// A producer's batch of change lines: every valid line re-encodes to a line that decodes to the
    /// same change.
    static func changeLines(_ bytes: UnsafeBufferPointer<UInt8>) {
        let lines = ChangeLines.parse(Array(bytes))
        for change in lines.changes {
            var writer = JSONWriter()
            change.encode(into: &writer)
            guard let again = try? Change.decode(writer.bytes), again == change else {
                fatalError("\(change) did not survive encode then decode")
            }
        }
    }

    /// A change-log record: what decodes re-encodes to bytes that decode and encode to themselves
    /// (compared as bytes, since a record may hold NaN coordinates, which never equal themselves).
    static func changeRecord(_ bytes: UnsafeBufferPointer<UInt8>) {
        let data = Array(bytes)
        guard let changes = try? ChangeCodec.decode(data[...]) else { return }
        let encoded = ChangeCodec.encode(changes)
        guard let again = try? ChangeCodec.decode(encoded[...]), ChangeCodec.encode(again) == encoded else {
            fatalError("a record of \(changes.count) changes did not survive encode then decode")
        }
    }

    /// A `pinwheel.v1+bin` frame from a server: decoding never traps, a frame that decodes is refused
    /// once its last byte is cut off (a decoder must not take a frame that ended early), and the same
    /// frame decoded again after itself, from the running state it left, never traps either.
    static func binaryMessage(_ bytes: UnsafeBufferPointer<UInt8>) {
        var decoder = BinaryDecoder()
        guard !bytes.isEmpty, (try? decoder.decode(bytes)) != nil else { return }
        var fresh = BinaryDecoder()
        if (try? fresh.decode(UnsafeBufferPointer(rebasing: bytes.dropLast()))) != nil {
            fatalError("a frame of \(bytes.count) bytes still decoded without its last byte")
        }
        _ = try? decoder.decode(bytes)
    }
}
