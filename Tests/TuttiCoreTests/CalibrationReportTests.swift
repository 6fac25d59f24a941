import Testing
@testable import TuttiCore

/// The upload the web app sends (a WAV file, bounded) and the report it gets back.
@Suite struct CalibrationReportTests {
    @Test func aWAVFilesFirstChannelIsTheRecording() throws {
        // Stereo 16-bit: left 1000, right −1000.
        let frames = 480
        var bytes = wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 16, dataBytes: frames * 4)
        for _ in 0..<frames { bytes += [0xE8, 0x03, 0x18, 0xFC] }
        let (samples, rate) = try CalibrationUpload.recording(wav: bytes)
        #expect(rate == 48_000 && samples.count == frames)
        #expect(samples.allSatisfy { $0 == 1000 / 32768 })
    }

    @Test func notAWAVFileOrOneTooLongIsRefusedInWordsAPersonReads() {
        #expect(throws: CalibrationRefusal.notWAV("not a RIFF/WAVE file")) { try CalibrationUpload.recording(wav: Array("ID3\u{3}hello".utf8)) }
        // 96 kHz: the limit is 30 s of it (2,880,000 samples); the header is enough to refuse.
        let frames = 31 * 96_000
        let header = wavHeader(sampleRate: 96_000, channels: 1, bitsPerSample: 16, dataBytes: frames * 2)
        let bytes = header + [UInt8](repeating: 0, count: frames * 2)
        do {
            _ = try CalibrationUpload.recording(wav: bytes)
            Issue.record("a 31 s recording at 96 kHz was taken")
        } catch {
            #expect(error == .tooLong(seconds: 31, limit: 30))
            #expect(error.message.text(in: .english) == "the recording is 31.0 s long; at most 30 s is analysed: record only while the sweeps play")
            #expect(error.message.text(in: .korean) == "녹음이 31.0초입니다. 분석은 최대 30초까지입니다. 스윕이 나오는 동안만 녹음하세요")
            #expect(error.code == "calibration.tooLong")
        }
        #expect(CalibrationRefusal.tooQuiet(peakDBFS: -72.4).message.text(in: .korean) == "녹음이 너무 작습니다 (최대 -72 dBFS). 방의 음량을 높이거나 마이크를 더 가까이 두세요")
    }

    @Test func theReportHasEachRoomsDelayTrimAndProblemInTheAskersLanguage() {
        var a = CalibrationRoomResult(room: "a", delayMilliseconds: 0, confidenceDB: 61.26, problem: nil)
        a.responseDB = [nil, 1.04, -2, 0, 0, 0, 0, 0, 0, 4]
        let b = CalibrationRoomResult(room: "b", delayMilliseconds: 12.4219, confidenceDB: 24, problem: .tooNoisy(confidenceDB: 24))
        let result = CalibrationResult(rooms: [a, b], recorderRatePPM: 150.04, peakDBFS: -11.64)
        let report = result.report(current: ["a": 0, "b": 3], language: .korean)
        let rooms = report["rooms"]?.array ?? []
        #expect(rooms.count == 2)
        #expect(rooms.first?["delayMs"]?.number == 0 && rooms.first?["trimMs"]?.number == -12.422 && rooms.first?["confidenceDb"]?.number == 61.3)
        #expect(rooms.first?["responseDb"]?.array?.first == .null && rooms.first?["eq"]?.array?.last?.number == -4)
        #expect(rooms.last?["delayMs"]?.number == 12.422 && rooms.last?["trimMs"]?.number == 3 && rooms.last?["currentTrimMs"]?.number == 3)
        #expect(rooms.last?["problemCode"]?.string == "calibration.roomNoisy")
        #expect(rooms.last?["problem"]?.string == "너무 약하게 들려서 믿을 수 없습니다 (신뢰도 24 dB). 음량을 높이거나 방을 조용히 하세요")
        #expect(report["usable"]?.bool == false && report["recorderRatePpm"]?.number == 150 && report["peakDbfs"]?.number == -11.6)
        #expect(report["bandsHz"]?.array?.count == 10)
    }
}
