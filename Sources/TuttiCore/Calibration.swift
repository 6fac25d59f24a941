import Glibc

/// The calibration signal: an exponential sine sweep (Farina), by default
/// 1.0 s from 20 Hz to 20 kHz (the EQ's bands, 32 Hz … 16 kHz) with 10 ms raised-cosine fades.
///
/// Why a sweep and not an MLS: deconvolving a sweep puts a speaker's
/// harmonic distortion *before* the linear response, so the arrival peak
/// stays clean at a loud level; a sweep is unharmed by the small rate
/// difference between the phone's clock and the leader's (an MLS's
/// circular correlation smears under it); and the same recording gives
/// the room's frequency response for room correction. Pure: a function of
/// time, so tests place it at any fractional delay exactly.
public struct CalibrationSweep: Equatable, Sendable {
    public var startFrequency: Double
    public var endFrequency: Double
    public var seconds: Double
    public var fadeSeconds: Double

    public static let standard = CalibrationSweep(startFrequency: 20, endFrequency: 20_000, seconds: 1.0, fadeSeconds: 0.01)

    public init(startFrequency: Double, endFrequency: Double, seconds: Double, fadeSeconds: Double) {
        self.startFrequency = startFrequency; self.endFrequency = endFrequency
        self.seconds = seconds; self.fadeSeconds = fadeSeconds
    }

    private var rate: Double { log(endFrequency / startFrequency) }

    /// The time at which the sweep passes `frequency`.
    public func time(atFrequency frequency: Double) -> Double {
        seconds * log(frequency / startFrequency) / rate
    }

    /// The sweep's value at `t` seconds after its start (0 outside it),
    /// peak 1. `endingAt` cuts it short (with the same fade), for a
    /// reference that stays below a recorder's Nyquist frequency.
    public func value(at t: Double, endingAt end: Double? = nil) -> Double {
        let stop = min(end ?? seconds, seconds)
        guard t >= 0, t <= stop else { return 0 }
        let k = rate / seconds
        let phase = 2 * Double.pi * startFrequency / k * (exp(k * t) - 1)
        var gain = 1.0
        if t < fadeSeconds { gain = 0.5 - 0.5 * cos(Double.pi * t / fadeSeconds) }
        if stop - t < fadeSeconds { gain *= 0.5 - 0.5 * cos(Double.pi * (stop - t) / fadeSeconds) }
        return gain * sin(phase)
    }

    /// The sweep sampled at `sampleRate`, scaled by `amplitude`.
    public func samples(sampleRate: Int, amplitude: Double = 1, endingAt end: Double? = nil) -> [Double] {
        let count = Int((min(end ?? seconds, seconds) * Double(sampleRate)).rounded(.up)) + 1
        return (0..<count).map { amplitude * value(at: Double($0) / Double(sampleRate), endingAt: end) }
    }
}

/// What one slot of a plan measures: a room's speaker, or one side of a
/// stereo pair. A pair's two speakers are measured one after the other, as
/// two sources, so each gets its own latency trim (set by the speaker's
/// own name, which reaches that speaker alone).
public struct CalibrationSource: Equatable, Sendable {
    /// The speaker, by the name it joined with: its trim is set by this name.
    public var speaker: String
    /// The room people see: the pair's name for a side of a pair, else the speaker's.
    public var room: String
    /// The side it plays in its pair (`.left` or `.right`); nil for a room of its own.
    public var side: ChannelMap?

    public init(speaker: String, room: String? = nil, side: ChannelMap? = nil) {
        self.speaker = speaker; self.room = room ?? speaker; self.side = side
    }

    /// The sources a list of rooms measures, in order: a stereo pair (by its
    /// name, or either speaker's) as its left speaker then its right, any
    /// other name as itself. A room named twice (a pair by its name and by a
    /// speaker's) is measured once.
    public static func expanding(_ rooms: [String], pairs: StereoPairs) -> [CalibrationSource] {
        var out: [CalibrationSource] = []
        for name in rooms {
            let sources: [CalibrationSource]
            if let p = pairs.pair(named: name) ?? pairs.pair(containing: name) {
                sources = [CalibrationSource(speaker: p.left, room: p.name, side: .left),
                           CalibrationSource(speaker: p.right, room: p.name, side: .right)]
            } else {
                sources = [CalibrationSource(speaker: name)]
            }
            for s in sources where !out.contains(where: { $0.speaker == s.speaker }) { out.append(s) }
        }
        return out
    }
}

/// What `calibrate.play` plays: slot i starts `i × slot` after the first,
/// one speaker per slot, in the order of `slots`. The first plays again
/// in a last slot, so the analysis measures the recorder's clock rate
/// against the leader's (a phone 50 ppm off would otherwise add 0.1 ms per
/// 2 s slot).
public struct CalibrationPlan: Equatable, Sendable {
    /// The rooms measured as people see them (a stereo pair once, by its name), in the order played.
    public var rooms: [String]
    /// What each slot measures, each once, in the order played: a room's speaker, or each side of a pair.
    public var sources: [CalibrationSource]
    /// The speaker of each slot: `sources`' speakers, then the first again when there are two or more.
    public var slots: [String]
    public var slotNanoseconds: Int64
    public var sweep: CalibrationSweep
    /// When the first slot starts on the leader's clock (information only: the analysis needs relative times).
    public var startLeaderNanoseconds: Int64?

    public static let defaultSlotNanoseconds: Int64 = 2_000_000_000
    /// A slot must hold the sweep and enough silence either side for the rooms' differences (±¼ slot).
    public static let slotRange: ClosedRange<Int64> = 1_500_000_000...10_000_000_000
    /// The most sources a plan measures.
    public static let maximumSources = 32

    /// The plan of `rooms`: a stereo pair of `pairs` (named by its name or
    /// either speaker's) is measured as its two sides, left then right.
    public init(rooms: [String], pairs: StereoPairs = StereoPairs(), slotNanoseconds: Int64 = defaultSlotNanoseconds,
                sweep: CalibrationSweep = .standard, startLeaderNanoseconds: Int64? = nil) {
        self.init(sources: CalibrationSource.expanding(rooms, pairs: pairs), slotNanoseconds: slotNanoseconds, sweep: sweep,
                  startLeaderNanoseconds: startLeaderNanoseconds)
    }

    public init(sources: [CalibrationSource], slotNanoseconds: Int64 = defaultSlotNanoseconds, sweep: CalibrationSweep = .standard,
                startLeaderNanoseconds: Int64? = nil) {
        var rooms: [String] = []
        for s in sources where !rooms.contains(s.room) { rooms.append(s.room) }
        self.rooms = rooms
        self.sources = sources
        let speakers = sources.map(\.speaker)
        self.slots = speakers.count >= 2 ? speakers + [speakers[0]] : speakers
        self.slotNanoseconds = slotNanoseconds
        self.sweep = sweep
        self.startLeaderNanoseconds = startLeaderNanoseconds
    }

    /// Seconds from the first slot's start to slot `i`'s.
    public func slotStart(_ i: Int) -> Double { Double(i) * Double(slotNanoseconds) / 1e9 }

    /// Seconds from the first slot's start to the end of the last sweep.
    public var duration: Double { slotStart(slots.count - 1) + sweep.seconds }

    public var json: JSONValue {
        let sources: [JSONValue] = self.sources.map { s in
            var o: [String: JSONValue] = ["speaker": .string(s.speaker), "room": .string(s.room)]
            if let side = s.side { o["side"] = .string(side.name) }
            return .object(o)
        }
        var o: [String: JSONValue] = ["rooms": .array(rooms.map { .string($0) }), "sources": .array(sources),
                                      "slots": .array(slots.map { .string($0) }),
                                      "slotMs": .number(Double(slotNanoseconds) / 1e6),
                                      "sweep": ["startHz": .number(sweep.startFrequency), "endHz": .number(sweep.endFrequency),
                                                "seconds": .number(sweep.seconds), "fadeSeconds": .number(sweep.fadeSeconds)]]
        if let s = startLeaderNanoseconds {
            o["startLeaderNs"] = .number(Double(s))
            o["slotStartsLeaderNs"] = .array(slots.indices.map { .number(Double(s + Int64($0) * slotNanoseconds)) })
        }
        return .object(o)
    }

    /// A plan as `json` writes it; nil when it is not one. A plan without
    /// `sources` (written by hand, or before pairs were measured apart)
    /// measures its rooms as `pairs` says.
    public init?(json: JSONValue, pairs: StereoPairs = StereoPairs()) {
        guard let rooms = json["rooms"]?.strings, !rooms.isEmpty, rooms.count <= Self.maximumSources, Set(rooms).count == rooms.count,
              let slotMs = json["slotMs"]?.number, slotMs.isFinite else { return nil }
        let slot = Int64((slotMs * 1e6).rounded())
        guard Self.slotRange.contains(slot) else { return nil }
        var sweep = CalibrationSweep.standard
        if let s = json["sweep"] {
            guard let a = s["startHz"]?.number, let b = s["endHz"]?.number, let t = s["seconds"]?.number, let f = s["fadeSeconds"]?.number,
                  a >= 20, b > a, b <= 24_000, t >= 0.1, t <= 5, f >= 0, f < t / 4 else { return nil }
            sweep = CalibrationSweep(startFrequency: a, endFrequency: b, seconds: t, fadeSeconds: f)
        }
        guard sweep.seconds * 1e9 < Double(slot) * 0.75 else { return nil }
        var sources = CalibrationSource.expanding(rooms, pairs: pairs)
        if let list = json["sources"] {
            guard let items = list.array, !items.isEmpty, items.count <= Self.maximumSources else { return nil }
            sources = []
            for item in items {
                guard let speaker = item["speaker"]?.string, !speaker.isEmpty, let room = item["room"]?.string, rooms.contains(room),
                      !sources.contains(where: { $0.speaker == speaker }) else { return nil }
                var side: ChannelMap?
                if let name = item["side"] {
                    guard let n = name.string, let s = ChannelMap(name: n), s == .left || s == .right else { return nil }
                    side = s
                }
                sources.append(CalibrationSource(speaker: speaker, room: room, side: side))
            }
        }
        guard !sources.isEmpty, sources.count <= Self.maximumSources else { return nil }
        self.init(sources: sources, slotNanoseconds: slot, sweep: sweep, startLeaderNanoseconds: json["startLeaderNs"]?.integer.map(Int64.init))
    }
}

/// Why `calibrate.play` cannot start.
public enum CalibrationPlayError: Error, Equatable, CustomStringConvertible {
    case busy
    case noRooms
    case notConnected(String)
    case badSlot
    case cannotStart(String)

    public var description: String {
        switch self {
        case .busy: "a calibration is already playing"
        case .noRooms: "name at least one room to calibrate (two to line rooms up)"
        case .notConnected(let r): "room \(r) is not connected"
        case .badSlot: "slotMs must be between 1500 and 10000"
        case .cannotStart(let why): "the calibration could not start: \(why)"
        }
    }
}

/// Why a recording as a whole cannot be used, in words a person acts on
/// (the message catalogue's `calibration.*`, in English and Korean).
public enum CalibrationRefusal: Error, Equatable, CustomStringConvertible {
    case sampleRateTooLow(Int)
    case tooShort(seconds: Double, needed: Double)
    /// Longer than an upload may be (`CalibrationUpload.maximumSeconds`).
    case tooLong(seconds: Double, limit: Double)
    case tooQuiet(peakDBFS: Double)
    case clipped(samples: Int)
    case tooNoisy
    case fewerThanTwoHeard
    /// The repeated first speaker came back this many ms (signed) away from
    /// where the slots put it, more than any recorder's clock explains: the
    /// recorder dropped or inserted audio between the sweeps.
    case skipped(milliseconds: Double)
    /// Not a WAV file `WAVParser` reads (the reason in English: it names the format found).
    case notWAV(String)
    /// No plan, or one that `CalibrationPlan(json:)` does not take.
    case badPlan

    /// A stable key for the message catalogue.
    public var code: String { message.key.rawValue }

    public var message: UserMessage {
        switch self {
        case .sampleRateTooLow(let r): UserMessage(.calibrationSampleRate, ["rate": String(r)])
        case .tooShort(let s, let n): UserMessage(.calibrationTooShort, ["seconds": Calibration.format(s, 1), "needed": Calibration.format(n, 1)])
        case .tooLong(let s, let l): UserMessage(.calibrationTooLong, ["seconds": Calibration.format(s, 1), "max": Calibration.format(l, 0)])
        case .tooQuiet(let p): UserMessage(.calibrationTooQuiet, ["peak": Calibration.format(p, 0)])
        case .clipped(let n): UserMessage(.calibrationClipped, ["count": String(n)])
        case .tooNoisy: UserMessage(.calibrationTooNoisy)
        case .fewerThanTwoHeard: UserMessage(.calibrationFewerThanTwo)
        case .skipped(let ms): UserMessage(.calibrationSkipped, ["ms": Calibration.format(ms, 1)])
        case .notWAV(let why): UserMessage(.calibrationNotWAV, ["reason": why])
        case .badPlan: UserMessage(.calibrationBadPlan)
        }
    }

    public var description: String { message.description }
}

/// What went wrong with one room's measurement.
public enum CalibrationProblem: Equatable, Sendable, CustomStringConvertible {
    /// Its sweep was not found above the noise.
    case notHeard
    /// Found, but too weakly to trust to a tenth of a millisecond.
    case tooNoisy(confidenceDB: Double)
    /// Two arrivals of similar strength: an echo as loud as the direct sound.
    case twoPeaks(apartMilliseconds: Double)

    public var code: String { message.key.rawValue }

    public var message: UserMessage {
        switch self {
        case .notHeard: UserMessage(.calibrationNotHeard)
        case .tooNoisy(let c): UserMessage(.calibrationRoomNoisy, ["confidence": Calibration.format(c, 0)])
        case .twoPeaks(let ms): UserMessage(.calibrationTwoPeaks, ["apart": Calibration.format(ms, 1)])
        }
    }

    public var description: String { message.description }
}

/// One source's measurement: a room's speaker, or one side of a stereo pair.
public struct CalibrationRoomResult: Equatable, Sendable {
    /// The speaker measured (its trim is set by this name): a room's, or one side of a pair.
    public var room: String
    /// The stereo pair it is a side of (nil: a room of its own).
    public var pair: String?
    /// Its side in that pair.
    public var side: ChannelMap?
    /// Arrival relative to the plan, ms, relative to the earliest room (so ≥ 0); nil when not found.
    public var delayMilliseconds: Double?
    /// Peak to noise of the deconvolved arrival, dB.
    public var confidenceDB: Double
    public var problem: CalibrationProblem?
    /// dB at the ten EQ band centres, relative to the 250 Hz–4 kHz mean (nil: not measured).
    public var responseDB: [Double?] = []
    /// EQ gains that flatten it (`Calibration.correction`).
    public var correction: [Double] { Calibration.correction(for: responseDB) }

    public init(room: String, pair: String? = nil, side: ChannelMap? = nil, delayMilliseconds: Double?, confidenceDB: Double,
                problem: CalibrationProblem? = nil, responseDB: [Double?] = []) {
        self.room = room; self.pair = pair; self.side = side
        self.delayMilliseconds = delayMilliseconds; self.confidenceDB = confidenceDB; self.problem = problem; self.responseDB = responseDB
    }
}

/// A room as people see it in a result: a room of its own (one measurement),
/// or a stereo pair with its two sides (left, then right).
public struct CalibrationRoomGroup: Equatable, Sendable {
    /// The room's name (a pair's name).
    public var room: String
    /// Its measurements: one, or a pair's two sides.
    public var measured: [CalibrationRoomResult]

    public var isPair: Bool { measured.contains { $0.pair != nil } }

    /// The room's response at the EQ's band centres: a pair's is the mean of
    /// its two sides' (it has one EQ); empty when a side was not measured.
    public var responseDB: [Double?] {
        guard !measured.isEmpty, measured.allSatisfy({ !$0.responseDB.isEmpty }) else { return [] }
        return measured[0].responseDB.indices.map { band in
            let values = measured.compactMap { $0.responseDB.indices.contains(band) ? $0.responseDB[band] : nil }
            return values.count == measured.count ? values.reduce(0, +) / Double(values.count) : nil
        }
    }

    /// EQ gains that flatten `responseDB`.
    public var correction: [Double] { Calibration.correction(for: responseDB) }
}

public struct CalibrationResult: Equatable, Sendable {
    public var rooms: [CalibrationRoomResult]
    /// The recorder's clock against the leader's, ppm (measured from the repeated first room; 0 when it could not be).
    public var recorderRatePPM: Double
    /// The recording's loudest sample, dBFS.
    public var peakDBFS: Double
    /// Dropouts (digital silence between sounds) taken out before the rooms were found, ms; 0 for a clean recording.
    public var closedGapsMilliseconds: Double = 0

    /// The results as people see the rooms: each stereo pair once, with its sides, in the order measured.
    public var byRoom: [CalibrationRoomGroup] {
        var out: [CalibrationRoomGroup] = []
        for r in rooms {
            let name = r.pair ?? r.room
            if r.pair != nil, let i = out.firstIndex(where: { $0.room == name && $0.isPair }) { out[i].measured.append(r) }
            else { out.append(CalibrationRoomGroup(room: name, measured: [r])) }
        }
        return out
    }

    /// Whether every room has a delay without a problem.
    public var isUsable: Bool { rooms.allSatisfy { $0.problem == nil && $0.delayMilliseconds != nil } }

    /// New latency trims (ms, as `rooms.set latencyMs`) that make every room
    /// arrive together: the latest room keeps its trim, the others are
    /// delayed by their difference. A positive trim plays a room earlier
    /// (it compensates a delay after the DAC), so delaying lowers it.
    /// `current` holds the trims the rooms had while measured.
    public func trims(current: [String: Double]) -> [String: Double] {
        let delays = rooms.compactMap { r in r.delayMilliseconds.map { (r.room, $0) } }
        guard let latest = delays.map(\.1).max() else { return [:] }
        var out: [String: Double] = [:]
        for (room, d) in delays { out[room] = (((current[room] ?? 0) - (latest - d)) * 1000).rounded() / 1000 }
        return out
    }
}

/// The analysis of a recording of a plan: pure, no I/O.
public enum Calibration {
    /// Below this peak-to-noise ratio a slot holds no sweep (noise alone reaches about 14 dB over a window).
    public static let heardDB = 20.0
    /// Below this, a sweep is found but not trusted.
    public static let trustedDB = 30.0
    /// Loudest sample below this: too quiet.
    public static let quietDBFS = -60.0
    /// Samples at or above this magnitude count as clipped; more than `clippedLimit` refuse the recording.
    public static let clipLevel: Float = 0.999
    public static let clippedLimit = 8

    /// Finds each room's arrival in `recording` (mono, any rate ≥ 16 kHz)
    /// by deconvolving it with the plan's sweep and placing the plan's
    /// slots on the peaks found.
    public static func analyse(recording: [Float], sampleRate: Int, plan: CalibrationPlan) throws(CalibrationRefusal) -> CalibrationResult {
        guard sampleRate >= 16_000 else { throw .sampleRateTooLow(sampleRate) }
        let fs = Double(sampleRate)
        let seconds = Double(recording.count) / fs
        guard seconds >= plan.duration else { throw .tooShort(seconds: seconds, needed: plan.duration) }
        var peak: Float = 0, clipped = 0
        for v in recording {
            let m = abs(v.isFinite ? v : 0)
            if m > peak { peak = m }
            if m >= clipLevel { clipped += 1 }
        }
        let peakDB = peak > 0 ? 20 * log10(Double(peak)) : -200
        guard peakDB >= quietDBFS else { throw .tooQuiet(peakDBFS: peakDB) }
        guard clipped <= clippedLimit else { throw .clipped(samples: clipped) }

        let measured = try measure(recording, sampleRate: sampleRate, plan: plan, peakDB: peakDB)
        guard let skew = measured.skew else { return measured.result }
        // The recorder skipped between the sweeps. A capture pipeline that
        // ran dry pads with digital silence (Chromium's MediaStream source
        // does, under load), which a microphone never records: close those
        // gaps and measure again. Only here, where the repeated first
        // speaker proves time was lost, since a noise-gated recorder's
        // zeros are real time.
        let closed = closingDropouts(recording, minimum: Int(dropoutSeconds * fs))
        if closed.removed > 0, let again = try? measure(closed.samples, sampleRate: sampleRate, plan: plan, peakDB: peakDB),
           again.skew == nil {
            var result = again.result
            result.closedGapsMilliseconds = Double(closed.removed) / fs * 1000
            return result
        }
        throw .skipped(milliseconds: skew * 1000)
    }

    /// Zero runs at least this long inside a recording are dropouts, not sound (1 ms: 48 samples at 48 kHz).
    public static let dropoutSeconds = 0.001
    /// The repeated first speaker may come back this far (relative) from its slot: 1000 ppm, ten times a phone's clock error.
    public static let skipTolerance = 1e-3

    /// `recording` without its runs of exact zeros of at least `minimum`
    /// samples that lie between sound (leading and trailing silence stays:
    /// it moves every sweep alike), and how many samples went.
    public static func closingDropouts(_ recording: [Float], minimum: Int) -> (samples: [Float], removed: Int) {
        guard let first = recording.firstIndex(where: { $0 != 0 }), let last = recording.lastIndex(where: { $0 != 0 }) else {
            return (recording, 0)
        }
        var out: [Float] = []
        out.reserveCapacity(recording.count)
        out.append(contentsOf: recording[..<first])
        var n = first, removed = 0
        while n <= last {
            if recording[n] != 0 { out.append(recording[n]); n += 1; continue }
            var end = n
            while end <= last, recording[end] == 0 { end += 1 }
            if end - n >= minimum { removed += end - n } else { out.append(contentsOf: recording[n..<end]) }
            n = end
        }
        out.append(contentsOf: recording[(last + 1)...])
        return (out, removed)
    }

    /// The rooms' arrivals in `recording`, and, when the repeated first
    /// speaker came back further from its slot than `skipTolerance` allows,
    /// by how much (seconds, signed).
    static func measure(_ recording: [Float], sampleRate: Int, plan: CalibrationPlan,
                        peakDB: Double) throws(CalibrationRefusal) -> (result: CalibrationResult, skew: Double?) {
        let fs = Double(sampleRate)
        guard Double(recording.count) / fs >= plan.duration else {
            throw .tooShort(seconds: Double(recording.count) / fs, needed: plan.duration)
        }
        let impulse = deconvolve(recording, sampleRate: sampleRate, sweep: plan.sweep)
        // Only lags where a whole sweep fits in the recording: near its end the
        // deconvolution sees part of a sweep, and its noise is no longer like the rest.
        let whole = max(1, recording.count - Int(plan.sweep.seconds * fs))
        let envelope = impulse.prefix(whole).map { abs($0) }
        let slot = Double(plan.slotNanoseconds) / 1e9 * fs
        let reach = Int(slot / 4)

        // The loudest arrival belongs to some slot; try each and keep the
        // placement whose slots find the most (and loudest) sweeps.
        guard let loudest = envelope.indices.max(by: { envelope[$0] < envelope[$1] }) else { throw .tooNoisy }
        var best: (heard: Int, score: Double, finds: [SlotFind])?
        for j in plan.slots.indices {
            let origin = Double(loudest) - Double(j) * slot
            let finds = plan.slots.indices.map { find(envelope, centre: origin + Double($0) * slot, reach: reach, sampleRate: fs) }
            let heard = finds.filter { $0.confidenceDB >= heardDB }.count
            let score = finds.reduce(0) { $0 + ($1.confidenceDB >= heardDB ? $1.peak : 0) }
            // Ties (sweeps missing at one end): the first sweep heard is the plan's first.
            if let b = best, (b.heard, b.score) >= (heard, score * (1 - 1e-9)) { continue }
            best = (heard, score, finds)
        }
        guard let placed = best, placed.heard > 0 else { throw .tooNoisy }
        guard placed.heard >= min(2, plan.slots.count) else { throw .fewerThanTwoHeard }
        let finds = placed.finds

        // The recorder's rate, from the first room heard twice.
        var ratio = 1.0, skew: Double?
        if plan.slots.count > plan.sources.count, let first = finds.first, let last = finds.last,
           first.confidenceDB >= trustedDB, last.confidenceDB >= trustedDB, first.echo == nil, last.echo == nil {
            let span = Double(plan.slots.count - 1) * slot
            let r = (last.position - first.position) / span
            if abs(r - 1) < skipTolerance { ratio = r } else { skew = (last.position - first.position - span) / fs }
        }
        // Each slot's arrival less where the plan puts it (on the recorder's clock), in leader seconds.
        var offsets: [String: Double] = [:]
        var results: [CalibrationRoomResult] = []
        for (i, source) in plan.sources.enumerated() {
            let room = source.speaker
            let f = finds[i]
            var problem: CalibrationProblem?
            if f.confidenceDB < heardDB { problem = .notHeard }
            else if f.confidenceDB < trustedDB { problem = .tooNoisy(confidenceDB: f.confidenceDB) }
            else if let apart = f.echo { problem = .twoPeaks(apartMilliseconds: apart) }
            if f.confidenceDB >= heardDB {
                offsets[room] = (f.position - Double(i) * slot * ratio) / fs / ratio
            }
            var result = CalibrationRoomResult(room: room, pair: source.side == nil ? nil : source.room, side: source.side,
                                               delayMilliseconds: nil, confidenceDB: f.confidenceDB, problem: problem)
            if problem == nil { result.responseDB = response(recording, sampleRate: sampleRate, sweep: plan.sweep, at: f.position) }
            results.append(result)
        }
        if let earliest = offsets.values.min() {
            for i in results.indices { results[i].delayMilliseconds = offsets[results[i].room].map { ($0 - earliest) * 1000 } }
        }
        return (CalibrationResult(rooms: results, recorderRatePPM: (ratio - 1) * 1e6, peakDBFS: peakDB), skew)
    }

    struct SlotFind {
        /// Fractional sample of the arrival.
        var position: Double
        var peak: Double
        var confidenceDB: Double
        /// ms between an earlier arrival as strong as half the loudest and the loudest.
        var echo: Double?
    }

    /// The arrival within `reach` samples of `centre`: the loudest peak,
    /// or an earlier one at least half as loud (the direct sound before an
    /// echo), refined to a fraction of a sample by a parabola.
    static func find(_ e: [Double], centre: Double, reach: Int, sampleRate fs: Double) -> SlotFind {
        let lo = max(1, Int(centre) - reach), hi = min(e.count - 2, Int(centre) + reach)
        guard lo < hi else { return SlotFind(position: centre, peak: 0, confidenceDB: 0) }
        var top = lo
        for n in lo...hi where e[n] > e[top] { top = n }
        // Noise: a robust deviation over the window (median |x| × 1.4826); the arrival and its tail are a small part of it.
        var window = Array(e[lo...hi])
        window.sort()
        let sigma = max(window[window.count / 2] * 1.4826, 1e-30)
        let confidence = 20 * log10(max(e[top], 1e-30) / sigma)
        // An earlier arrival, outside the main lobe (1 ms), as strong as half the loudest.
        var chosen = top, echo: Double?
        let guardSamples = Int(0.001 * fs), earliest = max(lo, top - Int(0.05 * fs))
        if top - guardSamples > earliest {
            var early = earliest
            for n in earliest..<(top - guardSamples) where e[n] > e[early] { early = n }
            if e[early] >= 0.5 * e[top], e[early] >= e[early - 1], e[early] >= e[early + 1] {
                echo = Double(top - early) / fs * 1000
                chosen = early
            }
        }
        let a = e[chosen - 1], b = e[chosen], c = e[chosen + 1]
        let denominator = a - 2 * b + c
        let shift = denominator < 0 ? max(-0.5, min(0.5, 0.5 * (a - c) / denominator)) : 0
        return SlotFind(position: Double(chosen) + shift, peak: e[top], confidenceDB: confidence, echo: echo)
    }

    /// The recording deconvolved by the sweep (regularised division in the
    /// frequency domain, limited to the sweep's band below the recorder's
    /// Nyquist frequency): an impulse response per slot, its peak at each
    /// sweep's arrival (sample n means the sweep started at sample n).
    public static func deconvolve(_ recording: [Float], sampleRate: Int, sweep: CalibrationSweep) -> [Double] {
        let fs = Double(sampleRate)
        let top = min(sweep.endFrequency, 0.45 * fs)
        let reference = sweep.samples(sampleRate: sampleRate, endingAt: sweep.time(atFrequency: top))
        let n = FFT.length(atLeast: recording.count + reference.count)
        let fft = FFT(count: n)
        var xr = [Double](repeating: 0, count: n), xi = [Double](repeating: 0, count: n)
        for (i, v) in recording.enumerated() { xr[i] = v.isFinite ? Double(v) : 0 }
        var sr = [Double](repeating: 0, count: n), si = [Double](repeating: 0, count: n)
        for (i, v) in reference.enumerated() { sr[i] = v }
        fft.transform(real: &xr, imaginary: &xi)
        fft.transform(real: &sr, imaginary: &si)
        var strongest = 0.0
        for k in 0...(n / 2) { strongest = max(strongest, sr[k] * sr[k] + si[k] * si[k]) }
        let floor = strongest * 1e-6
        // Pass band in log frequency: a raised-cosine ramp of half an octave at each end.
        let low = sweep.startFrequency, high = top
        func weight(_ f: Double) -> Double {
            guard f > low, f < high else { return 0 }
            let ramp = log(2.0) / 2
            let fromLow = log(f / low), toHigh = log(high / f)
            var w = 1.0
            if fromLow < ramp { w *= 0.5 - 0.5 * cos(Double.pi * fromLow / ramp) }
            if toHigh < ramp { w *= 0.5 - 0.5 * cos(Double.pi * toHigh / ramp) }
            return w
        }
        for k in 0..<n {
            let bin = k <= n / 2 ? k : n - k
            let w = weight(Double(bin) * fs / Double(n))
            if w == 0 { xr[k] = 0; xi[k] = 0; continue }
            // X · conj(S) / (|S|² + floor)
            let power = sr[k] * sr[k] + si[k] * si[k] + floor
            let re = (xr[k] * sr[k] + xi[k] * si[k]) / power * w
            let im = (xi[k] * sr[k] - xr[k] * si[k]) / power * w
            xr[k] = re; xi[k] = im
        }
        fft.transform(real: &xr, imaginary: &xi, inverse: true)
        let scale = 1 / Double(n)
        return (0..<recording.count).map { xr[$0] * scale }
    }

    /// `v` with `decimals` decimals, without Foundation (the catalogue's numbers).
    public static func format(_ v: Double, _ decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let r = (v * scale).rounded() / scale
        if decimals == 0 { return String(Int(r)) }
        let whole = Int(r.magnitude), frac = Int(((r.magnitude - Double(whole)) * scale).rounded())
        var f = String(frac)
        while f.count < decimals { f = "0" + f }
        return (r < 0 ? "-" : "") + "\(whole).\(f)"
    }
}
