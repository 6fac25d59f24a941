import Foundation
import Glibc
import Testing
import TuttiCore
import TuttiGestures
@testable import TuttiInput

private let KEY_PLAYPAUSE: UInt16 = 164, KEY_NEXTSONG: UInt16 = 163, KEY_PREVIOUSSONG: UInt16 = 165
private let KEY_VOLUMEUP: UInt16 = 115, KEY_MUTE: UInt16 = 113, KEY_A: UInt16 = 30, KEY_F1: UInt16 = 59

/// A session with a media remote, as the kernel would write it (ms).
private func mediaSession() -> [UInt8] {
    var b: [UInt8] = []
    b += keyRecords(ms: 1_000, code: KEY_PLAYPAUSE, value: 1)
    b += keyRecords(ms: 1_080, code: KEY_PLAYPAUSE, value: 0)
    // Volume up held a second, with the kernel's autorepeat (250 ms, then 33 ms) in between.
    b += keyRecords(ms: 2_000, code: KEY_VOLUMEUP, value: 1)
    for t in stride(from: Int64(2_250), to: 3_000, by: 33) { b += keyRecords(ms: t, code: KEY_VOLUMEUP, value: 2) }
    b += keyRecords(ms: 3_000, code: KEY_VOLUMEUP, value: 0)
    b += keyRecords(ms: 4_000, code: KEY_NEXTSONG, value: 1)
    b += keyRecords(ms: 4_100, code: KEY_NEXTSONG, value: 0)
    // Garbage: an event type we do not read, a code past KEY_MAX, a key value that does not exist.
    b += rawEvent(ms: 4_200, type: 0x15, code: 3, value: 9)
    b += rawEvent(ms: 4_300, type: 1, code: 0x3ff, value: 1)
    b += rawEvent(ms: 4_400, type: 1, code: KEY_PLAYPAUSE, value: 7)
    // A key nothing is bound to.
    b += keyRecords(ms: 4_500, code: KEY_A, value: 1)
    b += keyRecords(ms: 4_600, code: KEY_A, value: 0)
    // The kernel's buffer overflowed: the mute press before the next report is stale.
    b += rawEvent(ms: 5_000, type: 0, code: 3, value: 0)
    b += rawEvent(ms: 5_001, type: 1, code: KEY_MUTE, value: 1)
    b += rawEvent(ms: 5_002, type: 0, code: 0, value: 0)
    b += keyRecords(ms: 5_100, code: KEY_MUTE, value: 0)
    b += keyRecords(ms: 6_000, code: KEY_MUTE, value: 1)
    b += keyRecords(ms: 6_050, code: KEY_MUTE, value: 0)
    // The last release has no record after it to settle it: end of input does.
    b += keyRecords(ms: 7_000, code: KEY_PREVIOUSSONG, value: 1)
    b += keyRecords(ms: 7_060, code: KEY_PREVIOUSSONG, value: 0)
    return b
}

private let mediaExpected = [
    "toggle KEY_PLAYPAUSE press 1080",
    "vol+ KEY_VOLUMEUP down 2000", "vol+ KEY_VOLUMEUP hold#1 2600", "vol+ KEY_VOLUMEUP hold#2 2750", "vol+ KEY_VOLUMEUP hold#3 2900",
    "next KEY_NEXTSONG press 4100",
    "mute KEY_MUTE press 6050",
    "prev KEY_PREVIOUSSONG press 7060",
]

@Suite("evdev reader", .timeLimit(.minutes(1)))
struct InputEventReaderTests {
    @Test("Media keys end to end: records through a pipe in random pieces → default commands", arguments: [1, 2, 3, 4] as [UInt64])
    func mediaKeysThroughPipe(seed: UInt64) throws {
        let (r, w) = makePipe()
        // A truncated record at the end: logged and dropped.
        let bytes = mediaSession() + Array(rawEvent(ms: 8_000, type: 1, code: KEY_MUTE, value: 1).prefix(10))
        let reader = try InputEventReader(fd: r, name: "pipe", mapping: ButtonMapping(), clock: .replay, closesDescriptor: true)
        let collector = Collector()
        reader.start(handler: collector.handler)
        let writer = Thread { writeInPieces(bytes, to: w, seed: seed) }
        writer.start()
        #expect(collector.waitForFinish())
        #expect(collector.summary() == mediaExpected)
        #expect(collector.finishedWith == .some(nil))
        #expect(!reader.timestampsAreMonotonic)
        reader.wait()
    }

    @Test("The translator alone gives the same commands (no threads, no pipe)")
    func translatorAlone() {
        var t = EvdevTranslator(mapping: ButtonMapping())
        var d = InputEventDecoder()
        var out: [ButtonCommandEvent] = []
        var last = LocalTime(nanoseconds: 0)
        for e in d.decode(mediaSession()) {
            last = e.time
            out += t.handle(e, at: e.time)
        }
        out += t.router.finish(at: last)
        #expect(out.map { "\($0.command) \($0.source) \($0.trigger) \($0.time.nanoseconds / 1_000_000)" } == mediaExpected)
        #expect(t.droppedReports == 1)
    }

    @Test("A mapped rotary axis (EV_REL) turns into steps")
    func relativeAxis() throws {
        let mapping = try ButtonMapping.parse("encoder knob rel=REL_DIAL")
        var t = EvdevTranslator(mapping: mapping)
        let d = InputEvent(time: LocalTime(nanoseconds: 5_000_000), type: 2, code: 7, value: -2)
        let out = t.handle(d, at: d.time) + t.handle(InputEvent(time: d.time, type: 2, code: 8, value: 1), at: d.time)
        #expect(out.map(\.command) == [.volumeDown, .volumeDown])
    }

    @Test("Live clock: a press that waits for its double-press window is delivered by a timed tick")
    func liveTick() throws {
        let mapping = try ButtonMapping.parse("on KEY_F1 press toggle\non KEY_F1 double next")
        let (r, w) = makePipe()
        let reader = try InputEventReader(fd: r, mapping: mapping, clock: .live, closesDescriptor: true)
        let collector = Collector()
        reader.start(handler: collector.handler)
        // Timestamps in the records are ignored: a pipe cannot take EVIOCSCLOCKID.
        let started = Date()
        let records = keyRecords(ms: 0, code: KEY_F1, value: 1)
        _ = records.withUnsafeBytes { write(w, $0.baseAddress, $0.count) }
        usleep(60_000)
        let release = keyRecords(ms: 0, code: KEY_F1, value: 0)
        _ = release.withUnsafeBytes { write(w, $0.baseAddress, $0.count) }
        let released = Date()
        while collector.commands.isEmpty && Date().timeIntervalSince(started) < 5 { usleep(5_000) }
        let delay = Date().timeIntervalSince(released)
        #expect(collector.commands.map(\.command) == [.toggle])
        // The window is 300 ms after the release; the poll timeout rounds up, never down.
        #expect(delay >= 0.29 && delay < 2, "delivered \(delay) s after the release")
        close(w)
        #expect(collector.waitForFinish())
        #expect(collector.finishedWith == .some(nil))
    }

    @Test("stop() wakes a reader blocked on a quiet device")
    func stop() throws {
        let (r, w) = makePipe()
        defer { close(w) }
        let reader = try InputEventReader(fd: r, mapping: ButtonMapping(), closesDescriptor: true)
        let collector = Collector()
        reader.start(handler: collector.handler)
        usleep(50_000)
        let t0 = Date()
        reader.stop()
        #expect(Date().timeIntervalSince(t0) < 1)
        #expect(collector.finishedWith == .some(nil))
        reader.stop()  // idempotent
    }

    @Test("A read error ends the source with a typed error")
    func readError() throws {
        let fd = open("/", O_RDONLY | O_DIRECTORY)
        let reader = try InputEventReader(fd: fd, name: "/", mapping: ButtonMapping(), closesDescriptor: true)
        let collector = Collector()
        reader.start(handler: collector.handler)
        #expect(collector.waitForFinish())
        #expect(collector.finishedWith == .some(.read(device: "/", errno: EISDIR)))
    }

    @Test("Opening a missing device is a typed error that says where to look")
    func missingDevice() {
        #expect(throws: InputError.cannotOpen(path: "/dev/input/event-none", errno: ENOENT)) {
            _ = try InputEventReader(path: "/dev/input/event-none", mapping: ButtonMapping())
        }
        let message = InputError.cannotOpen(path: "/dev/input/event-none", errno: ENOENT).description
        #expect(message.contains("/dev/input/by-id"))
        #expect(InputError.cannotOpen(path: "x", errno: EACCES).description.contains("'input' group"))
    }

    @Test("Grabbing something that is not an input device is refused and logged, not fatal")
    func grabPipe() throws {
        let (r, w) = makePipe()
        defer { close(w) }
        let lines = LogLines()
        let reader = try InputEventReader(fd: r, mapping: ButtonMapping(), grab: true, closesDescriptor: true, logger: lines.logger)
        #expect(!reader.isGrabbed)
        #expect(lines.all.contains { $0.contains("cannot grab") })
    }
}

@Suite("Stopping from the handler", .timeLimit(.minutes(1)))
struct StopFromHandlerTests {
    @Test("A handler may stop its own source: no deadlock, finished follows")
    func stopInHandler() throws {
        let (r, w) = makePipe()
        defer { close(w) }
        let reader = try InputEventReader(fd: r, mapping: ButtonMapping(), clock: .replay, closesDescriptor: true)
        let collector = Collector()
        let inner = collector.handler
        reader.start { [reader] event in
            inner(event)
            if case .command = event { reader.stop() }
        }
        let bytes = keyRecords(ms: 0, code: 113, value: 1) + keyRecords(ms: 50, code: 113, value: 0) + keyRecords(ms: 100, code: 113, value: 1)
        _ = bytes.withUnsafeBytes { write(w, $0.baseAddress, $0.count) }
        #expect(collector.waitForFinish())
        #expect(collector.commands.map(\.command) == [.mute])
        #expect(collector.finishedWith == .some(nil))
    }
}
