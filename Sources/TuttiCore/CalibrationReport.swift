/// A recording uploaded for analysis (the web app's Tune rooms, `POST
/// /calibrate`), and the report of an analysis as JSON (the same shape as
/// `tutti --json calibrate --analyse`). Pure: bytes in, JSON out.
public enum CalibrationUpload {
    /// The longest recording analysed, at 48 kHz: a plan of 32 rooms is
    /// 67 s, but a household's two to six rooms take 5 to 13 s, and the
    /// analysis of 60 s needs about 130 MB (a 4 M-point FFT in four arrays).
    public static let maximumSeconds = 60.0
    /// At most this many samples are analysed: `maximumSeconds` at 48 kHz (a 96 kHz recording may be 30 s).
    public static let maximumSamples = 60 * 48_000
    /// The largest upload: 60 s of 48 kHz mono 32-bit float, or 16-bit stereo, and its header.
    public static let maximumBytes = 12 << 20

    /// The first channel of a WAV file, and its rate, refused with a reason
    /// a person reads when it is not a WAV file `WAVParser` takes or holds
    /// more than `maximumSamples`.
    public static func recording(wav bytes: [UInt8]) throws(CalibrationRefusal) -> (samples: [Float], sampleRate: Int) {
        let format: WAVFormat
        do { format = try WAVParser.parse(header: Array(bytes.prefix(1 << 16)), fileSize: bytes.count) } catch {
            throw .notWAV(error.description)
        }
        let frames = format.frameCount
        guard frames <= maximumSamples else {
            throw .tooLong(seconds: Double(frames) / Double(format.sampleRate), limit: Double(maximumSamples) / Double(format.sampleRate))
        }
        var stereo: [Float] = []
        bytes.withUnsafeBytes { raw in
            let data = UnsafeRawBufferPointer(rebasing: raw[format.dataOffset..<(format.dataOffset + format.dataLength)])
            WAVParser.appendStereoFloats(from: data, format: format, to: &stereo)
        }
        var mono = [Float](repeating: 0, count: stereo.count / 2)
        for i in mono.indices { mono[i] = stereo[2 * i] }
        return (mono, format.sampleRate)
    }
}

extension CalibrationResult {
    /// The analysis as JSON, with the trims that line the rooms up
    /// (`current`: each speaker's trim while measured, ms) and each problem
    /// in `language`: `rooms` [{room, delayMs, confidenceDb, trimMs,
    /// currentTrimMs, problem, problemCode, responseDb, eq}], a stereo pair
    /// once as {room, pair: {left, right}, sides: [{side, speaker, delayMs,
    /// confidenceDb, trimMs, currentTrimMs, problem, problemCode,
    /// responseDb}], confidenceDb (its weaker side's), problem (its first
    /// side's), responseDb and eq (the pair's, from both sides)};
    /// `bandsHz`, `recorderRatePpm`, `peakDbfs`, `usable`, and `gapsClosedMs` when dropouts were taken out.
    public func report(current: [String: Double], language: Language) -> JSONValue {
        let trims = trims(current: current)
        func rounded(_ v: Double, _ scale: Double) -> JSONValue { .number((v * scale).rounded() / scale) }
        func measurement(_ r: CalibrationRoomResult) -> [String: JSONValue] {
            var o: [String: JSONValue] = ["confidenceDb": rounded(r.confidenceDB, 10), "currentTrimMs": .number(current[r.room] ?? 0)]
            if let d = r.delayMilliseconds { o["delayMs"] = rounded(d, 1000) }
            if let t = trims[r.room] { o["trimMs"] = .number(t) }
            if let p = r.problem { o["problem"] = .string(p.message.text(in: language)); o["problemCode"] = .string(p.code) }
            if !r.responseDB.isEmpty { o["responseDb"] = .array(r.responseDB.map { $0.map { rounded($0, 10) } ?? .null }) }
            return o
        }
        let rooms: [JSONValue] = byRoom.map { group in
            var o: [String: JSONValue]
            if group.isPair {
                let sides: [JSONValue] = group.measured.map { r in
                    var side = measurement(r)
                    side["speaker"] = .string(r.room)
                    side["side"] = .string((r.side ?? .stereo).name)
                    return .object(side)
                }
                o = ["room": .string(group.room), "sides": .array(sides),
                     "confidenceDb": rounded(group.measured.map(\.confidenceDB).min() ?? 0, 10)]
                var pair: [String: JSONValue] = [:]
                for r in group.measured { if let side = r.side { pair[side.name] = .string(r.room) } }
                o["pair"] = .object(pair)
                if let p = group.measured.compactMap(\.problem).first { o["problem"] = .string(p.message.text(in: language)); o["problemCode"] = .string(p.code) }
            } else {
                o = measurement(group.measured[0])
                o.removeValue(forKey: "responseDb")
            }
            o["room"] = .string(group.room)
            let response = group.responseDB
            if !response.isEmpty {
                o["responseDb"] = .array(response.map { $0.map { rounded($0, 10) } ?? .null })
                o["eq"] = .numbers(group.correction)
            }
            return .object(o)
        }
        var report: [String: JSONValue] = ["rooms": .array(rooms), "bandsHz": .numbers(EqualizerSettings.bandFrequencies),
                                           "recorderRatePpm": rounded(recorderRatePPM, 10), "peakDbfs": rounded(peakDBFS, 10),
                                           "usable": .bool(isUsable)]
        if closedGapsMilliseconds > 0 { report["gapsClosedMs"] = rounded(closedGapsMilliseconds, 1000) }
        return .object(report)
    }
}
