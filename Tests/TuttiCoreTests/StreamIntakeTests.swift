import Testing
import TuttiCore

/// The follower's stream rules, message by message (no sockets, no decoder).
struct StreamIntakeTests {
    let main = StreamDescription(streamID: 7, codec: .opus, framesPerChunk: 960, bufferNanoseconds: 1_000_000_000)

    func chunk(_ sequence: UInt64, stream: UInt32 = 7) -> Chunk {
        Chunk(streamID: stream, sequence: sequence, pts: LeaderTime(nanoseconds: 5_000_000_000 + Int64(sequence) * 20_000_000), frames: 960, payload: [1])
    }
    func at(_ ms: Int64) -> LeaderTime { LeaderTime(nanoseconds: ms * 1_000_000) }

    @Test func theFirstChunkPlacesTheStreamAndOthersOfAnotherStreamAreIgnored() {
        var intake = StreamIntake(stream: main)
        #expect(intake.flush(streamID: 7, from: at(5_000), fade: true) == [], "a flush before any audio cuts nothing")
        #expect(intake.streamEnd(streamID: 7, at: at(5_000)) == [])
        #expect(intake.chunk(chunk(0, stream: 8)) == [], "another group's stream")
        #expect(intake.chunk(chunk(0)) == [.begin(epoch: at(5_000), bufferNanoseconds: 1_000_000_000), .decode(chunk(0), floor: nil)])
        #expect(intake.chunk(chunk(1)) == [.decode(chunk(1), floor: nil)])
        // A lost chunk: the next one waits, then the gap is concealed in order.
        #expect(intake.chunk(chunk(3)) == [])
        var later: [StreamIntake.Action] = []
        for s in 4...12 { later += intake.chunk(chunk(UInt64(s))) }
        #expect(later.first == .conceal(count: 1, framesPerChunk: 960))
        #expect(later.dropFirst().first == .decode(chunk(3), floor: nil))
        #expect(intake.statistics.concealed == 1)
    }

    @Test func aFlushCutsResetsAndWritesNothingBeforeTheCutUntilTheStreamStartsAgain() {
        var intake = StreamIntake(stream: main)
        _ = intake.chunk(chunk(0)); _ = intake.chunk(chunk(1))
        #expect(intake.flush(streamID: 9, from: at(5_030), fade: true) == [], "another stream's flush")
        #expect(intake.flush(streamID: 7, from: at(5_030), fade: true) == [.cut(at: at(5_030), fade: true), .resetDecoder])
        // After the cut the leader's new audio restarts its sequence; its pre-roll stays off the old audio.
        #expect(intake.chunk(chunk(40)) == [.decode(chunk(40), floor: at(5_030))])
        #expect(intake.floor == at(5_030))
        #expect(intake.streamEnd(streamID: 7, at: at(6_000)) == [.end(at: at(6_000))])
    }

    @Test func followingAnotherGroupCutsWithAFadeAndSwitchesStreamsOnTheSameTimeline() {
        var intake = StreamIntake(stream: main)
        _ = intake.chunk(chunk(0))
        let porch = StreamDescription(streamID: 11, codec: .pcm, framesPerChunk: 960, bufferNanoseconds: 1_000_000_000)
        #expect(intake.follow(porch, from: at(5_100)) == [.cut(at: at(5_100), fade: true), .follow(porch, newCodec: true)])
        #expect(intake.stream == porch)
        #expect(intake.chunk(chunk(1)) == [], "the old group's chunks no longer play")
        // No new begin: the new stream is on the same grid, written from the cut on.
        #expect(intake.chunk(chunk(50, stream: 11)) == [.decode(chunk(50, stream: 11), floor: at(5_100))])
        // Following before any audio: nothing to cut; the same codec keeps its decoder (reset).
        var fresh = StreamIntake(stream: main)
        let sameCodec = StreamDescription(streamID: 12, codec: .opus, framesPerChunk: 960, bufferNanoseconds: 1_000_000_000)
        #expect(fresh.follow(sameCodec, from: at(1)) == [.follow(sameCodec, newCodec: false)])
        #expect(fresh.chunk(chunk(0, stream: 12)).first == .begin(epoch: at(5_000), bufferNanoseconds: 1_000_000_000))
    }
}
