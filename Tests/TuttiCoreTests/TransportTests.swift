import Testing
import TuttiCore

/// The transport rules on frames given by the test: what each command does
/// at the change point, exactly, with no decoder, clock or rooms.
@Suite("Transport rules") struct TransportTests {
    static let second = StreamFormat.sampleRate

    /// Entries 1, 2, 3 ("a", "b", "c"), playing: `sent` segments on the grid
    /// (track, start, count, track frame), `pending` ones (track, count, track
    /// frame), sending next at `streamFrame`.
    func playing(sent: [(UInt32, Int, Int, Int)], pending: [(UInt32, Int, Int)] = [], streamFrame: Int? = nil,
                 decoding: TrackPosition? = nil, repeatMode: RepeatMode = .off) -> Transport {
        var queue = PlayQueue(seed: 1)
        queue.add(["a", "b", "c"])
        queue.repeatMode = repeatMode
        queue.select(0)
        var t = Transport(queue: queue, state: .playing)
        t.timeline.sent = sent.map { StreamSegment(start: $0.1, count: $0.2, track: $0.0, trackFrame: $0.3) }
        t.timeline.pending = pending.map { StreamSegment(start: 0, count: $0.1, track: $0.0, trackFrame: $0.2) }
        let end = sent.last.map { $0.1 + $0.2 } ?? 0
        t.timeline.streamFrame = streamFrame ?? end
        let last = pending.last.map { TrackPosition(track: $0.0, frame: $0.2 + $0.1) }
            ?? sent.last.map { TrackPosition(track: $0.0, frame: $0.3 + $0.2) } ?? TrackPosition(track: 1, frame: 0)
        t.timeline.decoding = decoding ?? last
        return t
    }

    func applied(_ t: inout Transport, _ command: PlayerCommand, at: Int, durations: [UInt32: Double] = [:]) -> Transport.Applied? {
        try? t.apply(command, at: at, durations: durations).get()
    }

    func failure(_ t: inout Transport, _ command: PlayerCommand, at: Int) -> String? {
        if case .failure(.invalid(let why)) = t.apply(command, at: at) { return why.description }
        return nil
    }

    // MARK: The timeline

    @Test func positionsComeFromWhatWasSentThenWhatIsPending() {
        let t = playing(sent: [(1, 0, 4_800, 0), (2, 4_800, 960, 0)], pending: [(2, 960, 960)])
        var timeline = t.timeline
        #expect(timeline.position(atFrame: 100) == TrackPosition(track: 1, frame: 100))
        #expect(timeline.position(atFrame: 5_000) == TrackPosition(track: 2, frame: 200))
        // Past what was sent: the pending audio, placed where it will go out.
        #expect(timeline.position(atFrame: 5_760 + 10) == TrackPosition(track: 2, frame: 970))
        // Nothing pending: the decoder's place.
        timeline.pending = []
        timeline.decoding = TrackPosition(track: 3, frame: 42)
        #expect(timeline.position(atFrame: 9_000) == TrackPosition(track: 3, frame: 42))
    }

    @Test func sendingMovesProvenanceOntoTheGridAndCuttingTrimsIt() {
        var timeline = StreamTimeline()
        timeline.streamFrame = 1_000
        timeline.pending = [StreamSegment(start: 0, count: 300, track: 1, trackFrame: 5_000),
                            StreamSegment(start: 0, count: 900, track: 2, trackFrame: 0)]
        timeline.send(960)
        #expect(timeline.sent == [StreamSegment(start: 1_000, count: 300, track: 1, trackFrame: 5_000),
                                  StreamSegment(start: 1_300, count: 660, track: 2, trackFrame: 0)])
        #expect(timeline.pending == [StreamSegment(start: 0, count: 240, track: 2, trackFrame: 0, runOffset: 660)])
        #expect(timeline.streamFrame == 1_960)
        #expect(timeline.upcoming(from: 1_500).map(\.start) == [1_300, 1_960])
        // A cut inside the second segment keeps its first part, and drops what is pending.
        let cutSent = timeline.cut(at: 1_500)
        #expect(cutSent)
        #expect(timeline.sent.map(\.count) == [300, 200])
        #expect(timeline.pending.isEmpty)
        // A cut where nothing was sent yet cuts nothing the rooms hold.
        let cutLater = timeline.cut(at: 5_000)
        #expect(!cutLater)
    }

    @Test func sentSegmentsAreForgottenInBatches() {
        var timeline = StreamTimeline()
        timeline.sent = (0..<100).map { StreamSegment(start: $0 * 10, count: 10, track: 1, trackFrame: $0 * 10) }
        timeline.forget(before: 600) // 60 ended before: not yet worth a copy
        #expect(timeline.sent.count == 100)
        timeline.forget(before: 700)
        #expect(timeline.sent.count == 30)
        #expect(timeline.sent.first?.start == 700)
    }

    // MARK: Commands

    @Test func pauseCutsAtTheChangePointAndRemembersWhatIsHeardThere() {
        var t = playing(sent: [(1, 0, 2 * Self.second, 0)])
        let at = Self.second + 480
        let out = applied(&t, .pause, at: at)
        #expect(out?.actions == [.flush(from: at, fade: true), .dropDecoded(resettingEncoder: true), .releaseSource])
        #expect(t.state == .paused)
        #expect(t.pausedAt == TrackPosition(track: 1, frame: at))
        #expect(t.timeline.sent.last.map { $0.start + $0.count } == at)
        // Pausing again changes nothing.
        #expect(applied(&t, .pause, at: at + 100)?.actions == [])
    }

    @Test func playResumesWherePausedWithAFadeInAndNoCutOfWhatRoomsNoLongerHold() {
        var t = playing(sent: [(1, 0, 2 * Self.second, 0)])
        _ = applied(&t, .pause, at: Self.second)
        let at = 5 * Self.second
        let out = applied(&t, .play, at: at)
        #expect(out?.actions == [.dropDecoded(resettingEncoder: true), .start(fadeIn: Transport.resumeFadeFrames),
                                 .open(TrackPosition(track: 1, frame: Self.second))])
        #expect(t.state == .playing)
        #expect(t.timeline.streamFrame == at)
    }

    @Test func toggleIsPauseWhilePlayingAndPlayOtherwise() {
        var t = playing(sent: [(1, 0, Self.second, 0)])
        _ = applied(&t, .toggle, at: 480)
        #expect(t.state == .paused)
        _ = applied(&t, .toggle, at: 960)
        #expect(t.state == .playing)
    }

    @Test func nextAndPreviousStepFromWhatIsHeardNotFromTheDecoder() {
        // Entry 2 is heard at the change point (1 s into it); the decoder is already on entry 3.
        let sent: [(UInt32, Int, Int, Int)] = [(1, 0, Self.second, 0), (2, Self.second, 3 * Self.second, 0)]
        var t = playing(sent: sent, pending: [(3, 960, 0)])
        #expect(applied(&t, .next, at: 2 * Self.second)?.actions.last == .open(TrackPosition(track: 3, frame: 0)))
        t = playing(sent: sent, pending: [(3, 960, 0)])
        let out = applied(&t, .previous, at: 2 * Self.second)
        // Within 3 s of its start: back to entry 1, from its start (no fade: a track's own start is bit-exact).
        #expect(out?.actions == [.flush(from: 2 * Self.second, fade: true), .dropDecoded(resettingEncoder: true),
                                 .start(fadeIn: 0), .open(TrackPosition(track: 1, frame: 0))])
        // More than 3 s in: previous restarts the heard entry.
        t = playing(sent: [(1, 0, Self.second, 0), (2, Self.second, 5 * Self.second, 0)], pending: [(3, 960, 0)])
        #expect(applied(&t, .previous, at: 4 * Self.second + 480)?.actions.last == .open(TrackPosition(track: 2, frame: 0)))
    }

    @Test func nextAtTheLastEntrySaysSoAndChangesNothingSent() {
        var t = playing(sent: [(3, 0, Self.second, 0)])
        #expect(failure(&t, .next, at: 480) == "already at the last track")
        #expect(t.timeline.sent.count == 1 && t.state == .playing)
        var looping = playing(sent: [(3, 0, Self.second, 0)], repeatMode: .all)
        #expect(applied(&looping, .next, at: 480)?.actions.last == .open(TrackPosition(track: 1, frame: 0)))
    }

    @Test func seekWhilePausedOnlyMovesThePlaceAndSeekPastTheEndMovesOn() {
        var t = playing(sent: [(1, 0, 2 * Self.second, 0)])
        _ = applied(&t, .pause, at: Self.second)
        #expect(applied(&t, .seek(seconds: 30), at: 2 * Self.second)?.actions == [])
        #expect(t.pausedAt == TrackPosition(track: 1, frame: 30 * Self.second))
        #expect(applied(&t, .seekBy(seconds: -40), at: 2 * Self.second)?.actions == [])
        #expect(t.pausedAt.frame == 0) // not before the start
        // Playing, past the end of a 10 s track: on to the next entry.
        var p = playing(sent: [(1, 0, 2 * Self.second, 0)])
        let out = applied(&p, .seek(seconds: 12), at: Self.second, durations: [1: 10])
        #expect(out?.actions.last == .open(TrackPosition(track: 2, frame: 0)))
        var q = playing(sent: [(1, 0, 2 * Self.second, 0)])
        #expect(applied(&q, .seek(seconds: 4), at: Self.second, durations: [1: 10])?.actions.last
                == .open(TrackPosition(track: 1, frame: 4 * Self.second)))
    }

    @Test func aQueueEditCutsTheNextTrackAlreadySentAtItsBoundary() {
        // Entry 1 is heard; entry 2's start went out at 3 s. Moving entry 3 after entry 1
        // makes entry 2 wrong: it is cut at its own start (no fade there), and entry 3 decoded from it.
        var t = playing(sent: [(1, 0, 3 * Self.second, 0), (2, 3 * Self.second, Self.second, 0)])
        let out = applied(&t, .move(from: 2, to: 1), at: Self.second)
        #expect(out?.actions == [.flush(from: 3 * Self.second, fade: false), .dropDecoded(resettingEncoder: true),
                                 .open(TrackPosition(track: 3, frame: 0))])
        #expect(t.timeline.streamFrame == 3 * Self.second)
        #expect(t.timeline.sent.map(\.track) == [1])
    }

    @Test func aQueueEditBeforeTheNextTrackIsSentOnlyRedirectsTheDecoder() {
        // Entry 2 is decoded but none of it sent: nothing the rooms hold is cut, the
        // decoded audio is dropped at the boundary (where the encoder may start afresh).
        var t = playing(sent: [(1, 0, 3 * Self.second, 0)], pending: [(2, 960, 0)])
        let out = applied(&t, .move(from: 2, to: 1), at: Self.second)
        #expect(out?.actions == [.dropDecoded(resettingEncoder: true), .open(TrackPosition(track: 3, frame: 0))])
        #expect(t.timeline.pending.isEmpty)
        #expect(t.timeline.streamFrame == 3 * Self.second)
        // Entry 2 just opened, nothing of it decoded: only the decoder moves, the encoder goes on.
        var opened = playing(sent: [(1, 0, 3 * Self.second, 0)], decoding: TrackPosition(track: 2, frame: 0))
        let redirect = applied(&opened, .move(from: 2, to: 1), at: Self.second)
        #expect(redirect?.actions == [.dropDecoded(resettingEncoder: false), .open(TrackPosition(track: 3, frame: 0))])
        // An edit that keeps the order sends nothing: shuffle off stays as it was.
        var same = playing(sent: [(1, 0, 3 * Self.second, 0), (2, 3 * Self.second, Self.second, 0)])
        #expect(applied(&same, .repeatMode(.all), at: Self.second)?.actions == [])
    }

    @Test func removingTheHeardEntryPlaysTheNextOrStops() {
        var t = playing(sent: [(1, 0, 2 * Self.second, 0)])
        #expect(applied(&t, .remove(index: 0), at: Self.second)?.actions.last == .open(TrackPosition(track: 2, frame: 0)))
        #expect(t.queue.entries.map(\.id) == [2, 3])
        var last = playing(sent: [(3, 0, 2 * Self.second, 0)])
        let out = applied(&last, .remove(index: 2), at: Self.second)
        #expect(out?.actions == [.flush(from: Self.second, fade: true), .dropDecoded(resettingEncoder: true), .endDecoding])
        #expect(last.state == .stopped)
        #expect(last.pausedAt == TrackPosition(track: 1, frame: 0)) // play goes on from the top
        #expect(failure(&last, .remove(index: 5), at: Self.second) == "no queue entry 5 (the queue has 2)")
        #expect(failure(&last, .removeEntry(id: 9), at: Self.second) == "no queue entry with id 9")
    }

    @Test func stopWhileTheListsTailIsHeardCutsIt() {
        var t = playing(sent: [(3, 0, 2 * Self.second, 0)])
        t.state = .stopped // the list ended when its last chunk went out
        t.tailUntil = 2 * Self.second
        let out = applied(&t, .stop, at: Self.second)
        #expect(out?.actions == [.flush(from: Self.second, fade: true), .dropDecoded(resettingEncoder: true), .endDecoding])
        #expect(t.tailUntil == nil)
        // Once the tail has played out, stop cuts nothing.
        var quiet = playing(sent: [(3, 0, 2 * Self.second, 0)])
        quiet.state = .stopped
        quiet.tailUntil = 2 * Self.second
        #expect(applied(&quiet, .stop, at: 3 * Self.second)?.actions == [.endDecoding])
    }

    @Test func aNewSpeedRestartsFromWhatIsHeardAndABadOneIsRefused() {
        var t = playing(sent: [(1, 0, 2 * Self.second, 0)])
        let out = applied(&t, .speed(1.5), at: Self.second)
        #expect(t.tempo.speed == 1.5)
        #expect(out?.actions.suffix(2) == [.start(fadeIn: Transport.resumeFadeFrames), .open(TrackPosition(track: 1, frame: Self.second))])
        #expect(applied(&t, .speed(1.5), at: Self.second)?.actions == []) // the same speed again: nothing
        #expect(failure(&t, .speed(7), at: Self.second)?.hasPrefix("speed must be") == true)
        // Paused: the tempo changes, nothing restarts.
        _ = applied(&t, .pause, at: Self.second)
        #expect(applied(&t, .pitch(semitones: 3), at: Self.second)?.actions == [])
        #expect(t.tempo.pitchSemitones == 3)
    }

    @Test func playOnAnEmptyQueueSaysSoAndAddingToItSetsThePlace() {
        var t = Transport(queue: PlayQueue(seed: 1), state: .stopped)
        #expect(failure(&t, .play, at: 0) == "the queue is empty")
        let out = applied(&t, .add(uris: ["x", "y"], next: false), at: 0)
        #expect(out?.added == [1, 2])
        #expect(t.pausedAt == TrackPosition(track: 1, frame: 0))
        #expect(applied(&t, .play, at: 960)?.actions.last == .open(TrackPosition(track: 1, frame: 0)))
        #expect(t.state == .playing)
        #expect(failure(&t, .add(uris: [], next: false), at: 960) == "nothing to add")
    }

    // MARK: Numbers from the network

    /// Every surface's numbers pass `PlayerCommand.checked` on their way into
    /// the player: a position that is no number is an error, a huge one is
    /// clamped; negative queue positions, speeds and pitches out of range and
    /// oversized adds are errors.
    @Test func everyCommandsNumbersAreCheckedBeforeTheyBecomeFrames() throws {
        func refusal(_ command: PlayerCommand) -> String? {
            if case .failure(.invalid(let why)) = command.checked() { return why.description }
            return nil
        }
        for bad in [Double.nan, .infinity, -.infinity, -1] {
            #expect(refusal(.seek(seconds: bad))?.hasPrefix("seek position must be a number of seconds ≥ 0") == true, "\(bad)")
        }
        for bad in [Double.nan, .infinity, -.infinity] {
            #expect(refusal(.seekBy(seconds: bad))?.hasPrefix("seek offset must be a finite number") == true, "\(bad)")
        }
        #expect(try PlayerCommand.seek(seconds: 1e300).checked().get() == .seek(seconds: 10_000_000))
        #expect(try PlayerCommand.seekBy(seconds: -1e300).checked().get() == .seekBy(seconds: -10_000_000))
        #expect(try PlayerCommand.seek(seconds: 30.5).checked().get() == .seek(seconds: 30.5))
        #expect(refusal(.playIndex(-1)) == "queue positions start at 0 (not -1)")
        #expect(refusal(.remove(index: Int.min)) == "queue positions start at 0 (not \(Int.min))")
        #expect(refusal(.move(from: 0, to: -5)) == "queue positions start at 0 (not -5)")
        #expect(try PlayerCommand.move(from: 0, to: Int.max).checked().get() == .move(from: 0, to: Int.max)) // the queue's length is Transport's to check
        #expect(refusal(.speed(.nan))?.hasPrefix("speed must be 0.5–2.0×") == true)
        #expect(refusal(.speed(.infinity))?.hasPrefix("speed must be") == true)
        #expect(refusal(.pitch(semitones: -.infinity))?.hasPrefix("pitch must be -12 to +12 semitones") == true)
        #expect(refusal(.add(uris: Array(repeating: "x", count: PlayerCommand.maximumQueueEntries + 1), next: false))
                == "at most 16384 entries fit in the queue (16385 given)")
    }

    @Test func secondsBecomeFramesWithoutTrapping() {
        #expect(StreamFormat.frames(seconds: 1.5) == 72_000)
        #expect(StreamFormat.frames(seconds: -0.00001) == 0) // toward zero
        #expect(StreamFormat.frames(seconds: 1e300) == Int.max)
        #expect(StreamFormat.frames(seconds: .infinity) == Int.max)
        #expect(StreamFormat.frames(seconds: -1e300) == Int.min)
        #expect(StreamFormat.frames(seconds: .nan) == 0)
    }

    /// MPD's `seek 0 1e300` and Snapcast's `setPosition` 1e300 ended the
    /// leader (`Int(seconds * 48000)` trapped): a position past the end is
    /// the track's end, which moves on to the next entry, as in MPD.
    @Test func aSeekFarPastTheEndIsClampedToTheTrackAndMovesOn() {
        var t = playing(sent: [(1, 0, 2 * Self.second, 0)])
        #expect(applied(&t, .seek(seconds: 1e300), at: Self.second, durations: [1: 10])?.actions.last == .open(TrackPosition(track: 2, frame: 0)))
        var by = playing(sent: [(1, 0, 2 * Self.second, 0)])
        #expect(applied(&by, .seekBy(seconds: 1e300), at: Self.second, durations: [1: 10])?.actions.last == .open(TrackPosition(track: 2, frame: 0)))
        var back = playing(sent: [(1, 0, 2 * Self.second, 0)])
        #expect(applied(&back, .seekBy(seconds: -1e300), at: Self.second, durations: [1: 10])?.actions.last
                == .open(TrackPosition(track: 1, frame: 0)))
        // A track whose length is not known yet: at most `maximumSeconds` in.
        var unknown = playing(sent: [(1, 0, 2 * Self.second, 0)])
        #expect(applied(&unknown, .seek(seconds: 1e300), at: Self.second)?.actions.last
                == .open(TrackPosition(track: 1, frame: 10_000_000 * Self.second)))
        // Paused: the place is the track's end; play then starts the next entry.
        var paused = playing(sent: [(1, 0, 2 * Self.second, 0)])
        _ = applied(&paused, .pause, at: Self.second)
        #expect(applied(&paused, .seek(seconds: 1e300), at: 2 * Self.second, durations: [1: 10])?.actions == [])
        #expect(paused.pausedAt == TrackPosition(track: 1, frame: 10 * Self.second))
        #expect(applied(&paused, .play, at: 3 * Self.second, durations: [1: 10])?.actions.last == .open(TrackPosition(track: 2, frame: 0)))
    }

    @Test func queuePositionsOutOfRangeAreErrorsAndTheQueueIsBounded() {
        var t = playing(sent: [(1, 0, 2 * Self.second, 0)])
        #expect(failure(&t, .move(from: 0, to: Int.max), at: Self.second) == "positions must be within 0…2")
        #expect(failure(&t, .playIndex(Int.max), at: Self.second) == "no queue entry \(Int.max) (the queue has 3)")
        #expect(failure(&t, .remove(index: Int.max), at: Self.second) == "no queue entry \(Int.max) (the queue has 3)")
        #expect(t.queue.entries.map(\.uri) == ["a", "b", "c"])
        var queue = PlayQueue(seed: 1)
        queue.add(Array(repeating: "x", count: PlayerCommand.maximumQueueEntries - 1))
        var full = Transport(queue: queue, state: .stopped)
        #expect(failure(&full, .add(uris: ["y", "z"], next: false), at: 0) == "the queue is full: it holds at most 16384 entries (it has 16383)")
        #expect(applied(&full, .add(uris: ["y"], next: false), at: 0)?.added.count == 1)
        #expect(full.queue.count == PlayerCommand.maximumQueueEntries)
    }
}
