import Testing
import TuttiCore

/// The playout thread's decisions, on made-up timelines and clocks: no
/// threads, no DAC, no sleeps.
struct PlayoutScheduleTests {
    func moment(_ target: Double?, stream: Int = 1, sink: Int = 0, underruns: Int = 0, valid: Int = 1_000, end: Int = 50_000, read: Int = 1_000,
                now: Int64 = 0) -> PlayoutSchedule.Moment {
        PlayoutSchedule.Moment(streamGeneration: stream, sinkGeneration: sink, sinkUnderruns: underruns, validStart: valid, writeEnd: end, readStart: read,
                               target: target, now: now)
    }

    @Test func silenceUntilTheFirstFrameExactlyThenPlayFromIt() {
        var s = PlayoutSchedule(steering: true, releaseMargin: 64)
        // No clock model yet: nothing written, the DAC stays stopped; no stream: a period of silence.
        #expect(s.decide(moment(nil), period: 480) == .wait(frames: 480))
        #expect(s.decide(moment(900, stream: 0), period: 480) == .silence(frames: 480))
        // Nothing written yet.
        #expect(s.decide(moment(900, end: 1_000), period: 480) == .silence(frames: 480))
        // The first frame leaves 1,300 frames from now: one period, then exactly the rest.
        #expect(s.decide(moment(-300), period: 480) == .silence(frames: 480))
        #expect(s.decide(moment(700), period: 480) == .silence(frames: 300))
        #expect(!s.playing)
        // Within two frames of on time counts as on time: the first frame is not dropped.
        #expect(s.decide(moment(1_001.6), period: 480) == .play)
        #expect(s.playing && s.position == 1_000 && s.ratio == 1)
    }

    @Test func aJoinerWithoutAClockKeepsTheNewestFramesAndStartsInStep() {
        var s = PlayoutSchedule(steering: true, releaseMargin: 64)
        func waiting(end: Int, read: Int) -> PlayoutSchedule.Moment {
            PlayoutSchedule.Moment(streamGeneration: 1, sinkGeneration: 0, validStart: 1_000, writeEnd: end, readStart: read,
                                   target: nil, now: 0, keptWaiting: 98_880)
        }
        // Up to what the ring keeps: nothing written (the DAC stays stopped), nothing released.
        #expect(s.decide(waiting(end: 1_000 + 98_880, read: 1_000), period: 480) == .wait(frames: 480))
        // 3 s of chunks and still no clock: the oldest go, the newest 98 880 stay for the writer's sake.
        #expect(s.decide(waiting(end: 1_000 + 144_000, read: 1_000), period: 480) == .discard(upTo: 1_000 + 144_000 - 98_880, silence: 0))
        #expect(s.decide(waiting(end: 1_000 + 144_480, read: 1_000 + 45_120), period: 480) == .discard(upTo: 1_000 + 144_480 - 98_880, silence: 0))
        // The clock arrives: the frame due now (1 s behind the newest) is still there, and plays in step.
        let m = PlayoutSchedule.Moment(streamGeneration: 1, sinkGeneration: 0, validStart: 1_000, writeEnd: 1_000 + 144_480,
                                       readStart: 1_000 + 45_600, target: Double(1_000 + 144_480 - 48_000), now: 0, keptWaiting: 98_880)
        #expect(s.decide(m, period: 480) == .play)
        #expect(s.position == Double(1_000 + 144_480 - 48_000))
    }

    @Test func aRunningDACThatLosesItsClockIsFedSilenceAStoppedOneIsNotStarted() {
        var s = PlayoutSchedule(steering: true, releaseMargin: 64)
        func noClock(queued: Int, end: Int = 50_000) -> PlayoutSchedule.Moment {
            PlayoutSchedule.Moment(streamGeneration: 1, sinkGeneration: 0, validStart: 1_000, writeEnd: end, readStart: 1_000,
                                   target: nil, now: 0, keptWaiting: 98_880, queued: queued, writeDue: 1_440)
        }
        // Stopped (nothing queued): a thousand periods of waiting write nothing.
        for _ in 0..<1_000 { #expect(s.decide(noClock(queued: 0), period: 480) == .wait(frames: 480)) }
        #expect(s.decide(noClock(queued: 0, end: 1_000 + 200_000), period: 480) == .discard(upTo: 1_000 + 200_000 - 98_880, silence: 0))
        // Running: silence when due, so it never runs dry.
        #expect(s.decide(noClock(queued: 1_440), period: 480) == .silence(frames: 480))
        #expect(s.decide(noClock(queued: 2_400), period: 480) == .wait(frames: 960))
    }

    @Test func aLateStartBeginsWhereTheClockIsAndStaleAudioIsDiscarded() {
        var s = PlayoutSchedule(steering: true, releaseMargin: 64)
        #expect(s.decide(moment(60_000), period: 480) == .discard(upTo: 50_000 - 64, silence: 480))
        #expect(s.decide(moment(12_345.4), period: 480) == .play)
        #expect(s.position == 12_345, "never out of step: from where the leader's clock is")
    }

    @Test func aNewStreamOrANewDeviceLinesUpAgain() {
        var s = PlayoutSchedule(steering: false, releaseMargin: 64)
        #expect(s.decide(moment(1_000), period: 480) == .play)
        s.position = 5_000 // the engine produced up to here
        #expect(s.decide(moment(5_000), period: 480) == .play && s.position == 5_000)
        // Steering off: nothing moves the position while playing, however far the clock is.
        #expect(s.decide(moment(9_000), period: 480) == .play && s.position == 5_000)
        // Nor does an underrun (the frames are all played, late).
        #expect(s.decide(moment(9_000, underruns: 1), period: 480) == .play && s.position == 5_000)
        // The DAC was unplugged and is back: start over at the clock.
        #expect(s.decide(moment(9_000, sink: 1), period: 480) == .play && s.position == 9_000)
        s.position = 9_480
        // A new stream (after a flush or a group change) waits for its first frame.
        #expect(s.decide(moment(500, stream: 2), period: 480) == .silence(frames: 480))
        #expect(!s.playing)
    }

    /// The DAC ran dry (the playout thread held up 34 ms on a loaded
    /// machine) and restarted 4 ms late: the next period is placed at the
    /// clock, not steered back over four seconds, and no resync is counted.
    @Test func anUnderrunLinesUpOnTheClockAtOnce() {
        var s = PlayoutSchedule(steering: true, releaseMargin: 64)
        var now: Int64 = 0
        #expect(s.decide(moment(1_000, now: now), period: 480) == .play)
        for k in 1...50 {
            now += 10_000_000
            s.position = Double(1_000 + 480 * k)
            #expect(s.decide(moment(s.position, now: now), period: 480) == .play)
        }
        // 4 ms late (192 frames) after the underrun: below the resync threshold, so steering alone would take 4 s at 1,000 ppm.
        s.position = Double(1_000 + 480 * 51)
        let late = s.position + 192
        #expect(s.decide(moment(late, underruns: 1, now: now + 14_000_000), period: 480) == .play)
        #expect(s.position == late && s.resyncs == 0 && s.ratio == 1)
        // Playing on from there, the same count: steered as usual, no new start.
        s.position = late + 480
        #expect(s.decide(moment(late + 480.5, underruns: 1, now: now + 24_000_000), period: 480) == .play)
        #expect(s.position == late + 480)
    }

    @Test func playingItSteersSmallErrorsAndResyncsLargeOnes() {
        var s = PlayoutSchedule(steering: true, releaseMargin: 64)
        #expect(s.decide(moment(1_000, now: 0), period: 480) == .play)
        // 10 ms late (480 frames): beyond the 5 ms resync threshold, skip ahead.
        s.position = 1_480
        #expect(s.decide(moment(1_960, now: 10_000_000), period: 480) == .play)
        #expect(s.resyncs == 1 && s.position == 1_960)
        #expect(s.lastError == 10_000_000)
        // 10 ms early: hold with exactly that much silence (at most a period), position kept.
        s.position = 2_440
        #expect(s.decide(moment(1_960, now: 20_000_000), period: 480) == .silence(frames: 480))
        #expect(s.resyncs == 2 && s.position == 2_440)
        // A small error is steered with a ratio, not a jump.
        var t = PlayoutSchedule(steering: true, releaseMargin: 64)
        _ = t.decide(moment(1_000, now: 0), period: 480)
        var now: Int64 = 0
        var position = 1_000.0
        for _ in 0..<400 {
            now += 10_000_000
            position += 480 * t.ratio
            t.position = position
            // The clock runs 4.8 frames (100 µs) ahead of what is played, steadily.
            #expect(t.decide(moment(position + 4.8, now: now), period: 480) == .play)
        }
        #expect(t.resyncs == 0)
        #expect(t.ratio > 1, "catching up: ratio \(t.ratio)")
    }

    /// A sink that takes five periods per wake-up holds up to 80 ms; audio
    /// still arriving, and silence, wait until it is down to 30 ms (1,440
    /// frames), where a one-period sink would have had to write them.
    @Test func lateAudioIsWaitedForUntilTheSinkIsDownToWhatItMustHold() {
        var s = PlayoutSchedule(steering: false, releaseMargin: 64, reach: 17)
        func m(end: Int, queued: Int) -> PlayoutSchedule.Moment {
            PlayoutSchedule.Moment(streamGeneration: 1, sinkGeneration: 0, validStart: 1_000, writeEnd: end, readStart: 1_000,
                                   target: 1_000, now: 0, queued: queued, writeDue: 1_440)
        }
        #expect(s.decide(m(end: 50_000, queued: 0), period: 480) == .play)
        s.position = 10_000
        // The whole next period and the kernel's reach are there: play, however full the sink is.
        #expect(s.decide(m(end: 10_000 + 480 + 17, queued: 3_360), period: 480) == .play)
        // One frame of the reach missing, 70 ms queued: sleep the 40 ms the sink can spare, then look again.
        #expect(s.decide(m(end: 10_000 + 480 + 16, queued: 3_360), period: 480) == .wait(frames: 1_920))
        #expect(s.decide(m(end: 10_100, queued: 1_441), period: 480) == .wait(frames: 1))
        // Down to what it must hold: written now, with what there is.
        #expect(s.decide(m(end: 10_100, queued: 1_440), period: 480) == .play)
        // Nothing ahead at all (paused, or between tracks): silence only when due.
        #expect(s.decide(m(end: 10_000, queued: 3_360), period: 480) == .wait(frames: 1_920))
        #expect(s.decide(m(end: 10_000, queued: 1_400), period: 480) == .play)
        // Before a stream's first frame is there, silence waits too; once it is there, the exact silence up to it is written ahead.
        var u = PlayoutSchedule(steering: false, releaseMargin: 64, reach: 17)
        #expect(u.decide(m(end: 1_000, queued: 3_000), period: 480) == .wait(frames: 1_560))
        #expect(u.decide(m(end: 1_000, queued: 1_000), period: 480) == .silence(frames: 480))
        #expect(u.decide(PlayoutSchedule.Moment(streamGeneration: 1, sinkGeneration: 0, validStart: 1_000, writeEnd: 9_000, readStart: 1_000,
                                                target: 700, now: 0, queued: 3_000, writeDue: 1_440), period: 480) == .silence(frames: 300))
        // A sink that never batches (writeDue 0 with nothing queued) never waits.
        var t = PlayoutSchedule(steering: false, releaseMargin: 64, reach: 17)
        #expect(t.decide(moment(1_000), period: 480) == .play)
        t.position = 10_000
        #expect(t.decide(moment(1_000, end: 10_100), period: 480) == .play)
    }
}
