import FoundationEssentials
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiSystem
import TuttiControlKit

/// Playing a calibration plan for real: every listed room moves into a
/// temporary group that plays the plan (a sweep at the start of each slot,
/// silence between), and only the slot's speaker is unmuted, switched half
/// way through the silence before each sweep. A stereo pair's two speakers
/// have a slot each (left, then right), so each gets its own trim. Afterwards the groups, the rooms'
/// settings and what was playing are put back. Everything else that plays is
/// paused meanwhile, so the microphone hears the sweeps alone.
extension Leader {
    /// Silence before the first slot in the plan's file, seconds.
    static let calibrationLead = 0.5
    /// The sweep's peak level, linear (−6 dBFS).
    static let calibrationAmplitude = 0.5

    /// Starts playing `rooms`' plan (a stereo pair, by its name or either
    /// speaker's, as its two sides) and returns it (its slot times on the
    /// leader's clock are filled once the stream has them, within about a
    /// start latency). Returns at once; `calibrationRunning` tells when it is over.
    public func playCalibration(rooms: [String], slotNanoseconds: Int64 = CalibrationPlan.defaultSlotNanoseconds) throws(CalibrationPlayError) -> CalibrationPlan {
        guard !rooms.isEmpty, rooms.count <= CalibrationPlan.maximumSources, Set(rooms).count == rooms.count else { throw .noRooms }
        guard CalibrationPlan.slotRange.contains(slotNanoseconds) else { throw .badSlot }
        var plan = CalibrationPlan(rooms: rooms, pairs: stereoPairs.withLock { $0 }, slotNanoseconds: slotNanoseconds)
        guard plan.sources.count <= CalibrationPlan.maximumSources else { throw .noRooms }
        let connected = Set(connectedSpeakers)
        if let missing = plan.sources.first(where: { !connected.contains($0.speaker) }) { throw .notConnected(missing.speaker) }
        guard !calibrating.exchange(true, ordering: .acquiringAndReleasing) else { throw .busy }
        // Each speaker's own settings: the gate mutes a pair's two apart.
        let speakers = plan.sources.map(\.speaker)

        // The plan as a file the group's player plays: 48 kHz, 16-bit stereo.
        let path = FileManager.default.temporaryDirectory.path + "/tutti-calibration-\(getpid()).wav"
        let rate = Double(StreamFormat.sampleRate)
        let frames = Int(((Self.calibrationLead + plan.duration + 0.5) * rate).rounded())
        var pcm = [Int16](repeating: 0, count: frames * 2)
        let sweep = plan.sweep.samples(sampleRate: StreamFormat.sampleRate, amplitude: Self.calibrationAmplitude)
        for i in plan.slots.indices {
            let first = Int(((Self.calibrationLead + plan.slotStart(i)) * rate).rounded())
            for (k, v) in sweep.enumerated() where first + k < frames {
                let s = sampleToInt16(Float(v))
                pcm[2 * (first + k)] = s; pcm[2 * (first + k) + 1] = s
            }
        }
        var bytes = wavHeader(sampleRate: StreamFormat.sampleRate, channels: 2, bitsPerSample: 16, dataBytes: pcm.count * 2)
        pcm.withUnsafeBytes { bytes.append(contentsOf: $0) }
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            calibrating.store(false, ordering: .releasing)
            throw .cannotStart("cannot write \(path)")
        }

        // What to put back.
        let savedTable = grouping.withLock { $0 }
        let savedSettings = speakers.map { settings(ofSpeaker: $0) }
        let playing = streams.withLock { Array($0.values) }.filter { $0.player.nowPlaying().state.isActive }
        for stream in playing { _ = try? stream.player.submit(.pause) }

        let group: GroupStatus
        do {
            var name = "Calibration"
            var n = 2
            while grouping.withLock({ $0.group(name) }) != nil { name = "Calibration \(n)"; n += 1 }
            group = try createGroup(name: name, rooms: plan.rooms)
        } catch {
            for stream in playing { _ = try? stream.player.submit(.play) }
            try? FileManager.default.removeItem(atPath: path)
            calibrating.store(false, ordering: .releasing)
            throw .cannotStart("\(error)")
        }
        @Sendable func gate(open speaker: String) {
            for (i, r) in speakers.enumerated() {
                var s = savedSettings[i]
                s.muted = r != speaker
                configureSpeaker(r, s)
            }
        }
        gate(open: plan.slots[0])
        let stream = streams.withLock { $0[group.id] }
        do {
            guard let stream else { throw PlayerError.invalid(UserMessage(.playerCalibrationNoStream)) }
            _ = try stream.player.submit(.add(uris: [path], next: false))
            _ = try stream.player.submit(.playIndex(0))
        } catch {
            log.error("calibration: \(error)")
        }
        log.info("calibration: \(plan.slots.count) sweeps in \(plan.slots.joined(separator: ", ")), one every \(Double(slotNanoseconds) / 1e9) s")

        // When the file's first frame is heard, on the leader's clock.
        let deadline = Monotonic.now() + 3_000_000_000
        var start: Int64?
        while start == nil, Monotonic.now() < deadline, let stream {
            start = stream.player.leaderTimeOfTrackStart()
            if start == nil { Monotonic.sleep(nanoseconds: 5_000_000) }
        }
        if let start { plan.startLeaderNanoseconds = start + Int64(Self.calibrationLead * 1e9) }

        let restore: @Sendable () -> Void = { [self] in
            calibrationRun.withLock { $0 = nil }
            for (i, r) in speakers.enumerated() { configureSpeaker(r, savedSettings[i]) }
            _ = try? changeGroups { (t) throws(GroupError) in t = savedTable }
            if let removed = streams.withLock({ $0.removeValue(forKey: group.id) }) { removed.player.stop() }
            if let stateStore { try? stateStore.forget(group: group.id) }
            for stream in playing { _ = try? stream.player.submit(.play) }
            try? FileManager.default.removeItem(atPath: path)
            log.info("calibration: done; rooms, groups and playback as they were")
            calibrating.store(false, ordering: .releasing)
        }
        // The gating: each slot's speaker unmuted a quarter slot before its sweep.
        let slots = plan.slots, firstHeard = start ?? (Monotonic.now() + 200_000_000)
        let leadNs = Int64(Self.calibrationLead * 1e9), quarter = slotNanoseconds / 4
        let end = firstHeard + leadNs + Int64(plan.duration * 1e9) + 300_000_000
        let run = CalibrationRun(restore: restore)
        calibrationRun.withLock { $0 = run }
        /// Sleeps until `instant`; false when the run was finished meanwhile (the leader stops).
        @Sendable func sleep(until instant: Int64) -> Bool {
            while Monotonic.now() < instant {
                if run.isDone { return false }
                Monotonic.sleep(nanoseconds: min(10_000_000, max(0, instant - Monotonic.now())))
            }
            return !run.isDone
        }
        do {
            try sourceThreads.start(name: "tutti-calibrate") {
                for i in slots.indices.dropFirst() {
                    guard sleep(until: firstHeard + leadNs + Int64(i) * slotNanoseconds - quarter) else { return }
                    gate(open: slots[i])
                }
                if sleep(until: end) { run.finish() }
            }
        } catch {
            run.finish()
            throw .cannotStart("\(error)")
        }
        return plan
    }

    /// Whether a calibration is playing (its rooms are in the temporary group).
    public var calibrationRunning: Bool { calibrating.load(ordering: .acquiring) }
}

/// One calibration's putting back, done once: at its end, or when the leader stops first.
final class CalibrationRun: Sendable {
    private let done = Atomic<Bool>(false)
    private let restore: @Sendable () -> Void
    init(restore: @escaping @Sendable () -> Void) { self.restore = restore }
    var isDone: Bool { done.load(ordering: .acquiring) }
    func finish() { if !done.exchange(true, ordering: .acquiringAndReleasing) { restore() } }
}

extension StreamPlayer {
    /// The leader time at which the current track's frame 0 is heard, once its first chunks are planned.
    func leaderTimeOfTrackStart() -> Int64? {
        published.withLock { p in
            guard p.state == .playing, let s = p.segments.first(where: { $0.phase == nil }) else { return nil }
            return p.epoch.nanoseconds + StreamFormat.nanoseconds(frames: s.start - s.firstTrackFrame)
        }
    }
}
