import Testing
import TuttiCore

/// Stream frames back to track frames, exactly, as chunks split a run.
@Suite struct StreamSegmentTests {
    @Test func normalSpeedIsOneToOne() {
        let s = StreamSegment(start: 1_000, count: 960, track: 7, trackFrame: 48_000)
        #expect(s.trackFrame(at: 1_000) == 48_000)
        #expect(s.trackFrame(at: 1_500) == 48_500)
        #expect(s.trackFrame(at: 9_999) == 48_960, "clamped to the segment's end")
    }

    @Test func splittingARunIntoChunksNeverDrifts() {
        // 60 s of track at 1.5× is 40 s of stream, sent in 20 ms chunks of 960 frames.
        let speed = 1.5
        var run = StreamSegment(start: 0, count: 40 * 48_000, track: 1, trackFrame: 0, speed: speed)
        var sent: [StreamSegment] = []
        var at = 0
        while run.count > 0 {
            sent.append(run.take(min(960, run.count), at: at))
            at += 960
        }
        #expect(sent.count == 2_000)
        for s in sent {
            #expect(s.firstTrackFrame == Int((Double(s.start) * speed).rounded(.down)))
        }
        let last = sent[sent.count - 1]
        #expect(last.trackFrame(at: last.start + last.count) == 60 * 48_000, "the run ends at the track's end exactly")
    }

    @Test func silenceWhileWaitingHoldsThePosition() {
        let s = StreamSegment(start: 0, count: 4_800, track: 2, trackFrame: 10_000, phase: .buffering, speed: 2, runOffset: 500)
        #expect(s.trackFrame(at: 0) == 11_000)
        #expect(s.trackFrame(at: 4_000) == 11_000)
        var copy = s
        _ = copy.take(960, at: 0)
        #expect(copy.runOffset == 500, "silence does not advance the run")
    }
}
