import TuttiCore

/// An Ogg Opus file (RFC 7845) written from Opus packets at 48 kHz: the
/// mapping (headers, granule positions, the end) is TuttiCore's
/// `OpusOggMapping`, the pages libogg's (`OggStream`).
///
/// Thread contract: one thread at a time (the leader's preview worker).
public final class OggOpusWriter {
    private let stream: OggStream
    private var mapping: OpusOggMapping
    private var bytes: [UInt8] = []

    /// `preSkip`: the encoder's look-ahead in samples at 48 kHz. Opens libogg if no one has yet.
    public init(serial: UInt32, preSkip: Int, channels: Int = 2, vendor: String = "Tutti") throws(OggError) {
        stream = try OggStream(serial: serial)
        mapping = OpusOggMapping(preSkip: preSkip, channels: channels)
        for header in mapping.headers(vendor: vendor) { try put(header) }
    }

    /// Adds one Opus packet holding `samples` samples (per channel, at 48 kHz).
    public func append(packet: [UInt8], samples: Int) throws(OggError) {
        if let ready = mapping.append(packet, samples: samples) { try put(ready) }
    }

    /// Ends the stream: `samples` is how many of the decoded samples after
    /// the pre-skip are the audio. The whole file.
    public func finish(samples: Int) throws(OggError) -> [UInt8] {
        if let last = mapping.finish(samples: samples) { try put(last) }
        try stream.pages(into: &bytes, flush: true)
        return bytes
    }

    private func put(_ packet: OpusOggMapping.Packet) throws(OggError) {
        try stream.append(packet.bytes, granule: packet.granule, number: packet.number, first: packet.first, last: packet.last)
        try stream.pages(into: &bytes, flush: packet.endsPage)
    }
}
