import Testing
import TuttiCore

/// The source thread's pacing on simulated time: no threads, no sleeps.
struct SourcePacingTests {
    let ms = nanosecondsPerMillisecond
    let chunk = 960 // 20 ms at 48 kHz
    var pacing: SourcePacing { SourcePacing(buffer: 1_000 * ms, startLatency: 100 * ms, framesPerChunk: chunk) }

    /// Nanoseconds of `frames` at 48 kHz.
    func duration(_ frames: Int) -> Int64 { Int64(frames) * nanosecondsPerSecond / 48_000 }

    /// Runs a source that always has `pendingChunks` decoded for `seconds`
    /// of simulated time from 0 (epoch: a start latency ahead), doing each
    /// action as the thread does; every chunk sent with when it went.
    func run(seconds: Int64, pendingChunks: Int = 10) -> (sent: [(at: Int64, pts: Int64)], wakeUps: Int, longestWait: Int64) {
        let epoch = 100 * ms
        var now: Int64 = 0, frame = 0, wakeUps = 0, longestWait: Int64 = 0
        var sent: [(at: Int64, pts: Int64)] = []
        while now < seconds * nanosecondsPerSecond {
            let actions = pacing.next(now: now, nextPTS: epoch + duration(frame), pendingFrames: pendingChunks * chunk, starved: false, endOfList: false)
            for action in actions {
                switch action {
                case .wait(let w): now += w; longestWait = max(longestWait, w)
                case .send(let n):
                    wakeUps += 1
                    for _ in 0..<n { sent.append((now, epoch + duration(frame))); frame += chunk }
                default: Issue.record("unexpected \(action)")
                }
            }
        }
        return (sent, wakeUps, longestWait)
    }

    @Test func aChunkGoesABufferAheadOfItsPTSTwoAWakeUpTheSecondAChunkEarly() {
        let (sent, wakeUps, longestWait) = run(seconds: 3)
        // At start the rooms are filled at once: every chunk due by now + buffer (0.9 s of audio: 45 chunks) in 23 wake-ups.
        #expect(sent.prefix(while: { $0.at == 0 }).count == 46)
        // Then each goes no earlier than a chunk before its send time and never after it.
        for (i, c) in sent.enumerated() {
            #expect(c.at <= max(0, c.pts - 1_000 * ms), "chunk \(i) late")
            #expect(c.at >= c.pts - 1_000 * ms - duration(chunk), "chunk \(i) early")
        }
        // 3 s of running: the burst and 3 s of audio, 25 wake-ups a second after it.
        #expect(sent.count == 46 + 150)
        #expect(wakeUps == 23 + 75)
        // Commands are looked at within 100 ms even without a wake-up (they wake the thread anyway).
        #expect(longestWait <= 100 * ms)
    }

    @Test func oneChunkLeftGoesAloneAndTheListEndsWhenAllIsSent() {
        #expect(pacing.next(now: 0, nextPTS: 500 * ms, pendingFrames: chunk + 1, starved: false, endOfList: true) == [.send(chunks: 1)])
        #expect(pacing.next(now: 0, nextPTS: 500 * ms, pendingFrames: 2 * chunk, starved: false, endOfList: true) == [.send(chunks: 2)])
        #expect(pacing.next(now: 0, nextPTS: 500 * ms, pendingFrames: 300, starved: false, endOfList: true) == [.send(chunks: 1)])
        // Everything sent: the end goes at once, not at its PTS (the rooms play what they hold).
        #expect(pacing.next(now: 0, nextPTS: 5_000 * ms, pendingFrames: 0, starved: false, endOfList: true) == [.finish])
        // Not yet due: wait exactly until it is.
        #expect(pacing.next(now: 0, nextPTS: 1_030 * ms, pendingFrames: 2 * chunk, starved: false, endOfList: true) == [.wait(30 * ms)])
    }

    @Test func aStarvedSourceSendsSilenceExactlyAsItFallsDueOneChunkAtATime() {
        // The rooms hold up to 1 s: until the next chunk is a start latency from due, nothing goes; looked at every 20 ms.
        #expect(pacing.next(now: 0, nextPTS: 2_000 * ms, pendingFrames: 0, starved: true, endOfList: false) == [.wait(20 * ms)])
        #expect(pacing.next(now: 1_890 * ms, pendingFrames: 0) == [.wait(10 * ms)])
        // Due: a chunk of silence, sent at once.
        #expect(pacing.next(now: 1_900 * ms, pendingFrames: 0) == [.appendSilence(frames: chunk), .send(chunks: 1)])
        // What came in is topped up with silence to a chunk.
        #expect(pacing.next(now: 1_900 * ms, pendingFrames: 300) == [.appendSilence(frames: chunk - 300), .send(chunks: 1)])
        // A chunk or more came in: no silence, but one chunk a wake-up while starved.
        #expect(pacing.next(now: 1_900 * ms, pendingFrames: 3 * chunk) == [.send(chunks: 1)])
        #expect(pacing.next(now: 1_000 * ms, nextPTS: 2_000 * ms, pendingFrames: 3 * chunk, starved: true, endOfList: false) == [.send(chunks: 1)])
        #expect(pacing.next(now: 990 * ms, nextPTS: 2_000 * ms, pendingFrames: 3 * chunk, starved: true, endOfList: false) == [.wait(10 * ms)])
    }

    @Test func aStarvedSourceOnABufferShorterThanTheStartLatencyMakesSilenceThenWaits() {
        let short = SourcePacing(buffer: 50 * ms, startLatency: 100 * ms, framesPerChunk: chunk)
        #expect(short.next(now: 1_900 * ms, nextPTS: 2_000 * ms, pendingFrames: 0, starved: true, endOfList: false)
                == [.appendSilence(frames: chunk), .wait(50 * ms)])
    }

    @Test func starvedForASecondSilenceKeepsTheRoomsFedAtTheRealRate() {
        // Simulated: nothing arrives for 1 s from 0; every chunk due then is silence, each sent a start latency before its PTS.
        var now: Int64 = 0, frame = 0, silent = 0
        let epoch = 1_000 * ms // the rooms hold a second
        while now < 2_000 * ms {
            for action in pacing.next(now: now, nextPTS: epoch + duration(frame), pendingFrames: 0, starved: true, endOfList: false) {
                switch action {
                case .wait(let w): now += w
                case .appendSilence(let n): #expect(n == chunk); silent += 1
                case .send(let n):
                    #expect(n == 1)
                    #expect(now == epoch + duration(frame) - 100 * ms)
                    frame += chunk
                case .finish: Issue.record("finished")
                }
            }
        }
        // From 0.9 s (the first chunk due, a start latency ahead) until 2 s: a chunk every 20 ms.
        #expect(silent == 55)
    }
}

extension SourcePacing {
    /// The starved source of the tests above: the next chunk's PTS is 2 s.
    func next(now: Int64, pendingFrames: Int) -> [Action] {
        next(now: now, nextPTS: 2_000 * nanosecondsPerMillisecond, pendingFrames: pendingFrames, starved: true, endOfList: false)
    }
}
