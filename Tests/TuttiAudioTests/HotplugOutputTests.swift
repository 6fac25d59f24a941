import Foundation
import Testing
import TuttiAudio
import TuttiCore

/// A DAC that the test unplugs: the one piece of hardware that cannot exist
/// here, behind the same `AudioSink` interface as ALSASink. (faults.py
/// dac-gone does the same through real ALSA and a PulseAudio server.)
private final class UnpluggableDAC: AudioSink {
    let name = "fake-usb-dac"
    let periodFrames = 240
    var underruns = 0
    var written = 0
    var plugged = true
    var closed = false
    func delay() -> (frames: Int, at: Int64) { (0, Monotonic.now()) }
    func write(_ samples: UnsafePointer<Int16>, frames: Int) -> Bool {
        guard plugged else { return false }
        written += frames
        underruns += 1 // one per write, to check they add up across devices
        return true
    }
    var failure: String? { plugged ? nil : "No such device" }
    func close() { closed = true }
}

struct HotplugOutputTests {
    @Test func anUnpluggedDeviceIsWaitedForReopenedAndCountedAsNew() throws {
        var devices: [UnpluggableDAC] = []
        var present = true
        var changes: [HotplugChange] = []
        let output = HotplugOutput(name: "alsa:usb", retryMilliseconds: 50, open: { () throws(AudioError) in
            guard present else { throw AudioError.device(name: "usb", operation: "open", reason: "No such device") }
            let d = UnpluggableDAC()
            devices.append(d)
            return d
        }, onChange: { changes.append($0) })
        #expect(output.isPresent && output.periodFrames == 240 && output.generation == 0)
        let block = [Int16](repeating: 1, count: 480)
        #expect(block.withUnsafeBufferPointer { output.write($0.baseAddress!, frames: 240) })
        #expect(devices[0].written == 240)

        // Unplugged: the write fails, the output closes the device and goes on without it, in real time.
        devices[0].plugged = false
        present = false
        let t0 = Monotonic.now()
        for _ in 0..<10 { #expect(block.withUnsafeBufferPointer { output.write($0.baseAddress!, frames: 240) }) }
        let elapsed = Double(Monotonic.now() - t0) / 1e6
        #expect(!output.isPresent && devices[0].closed)
        #expect(changes == [.lost("fake-usb-dac failed while playing: No such device")])
        // Ten 5 ms periods into nothing take about 50 ms (the first, failed one is paced too).
        // (The upper bound only says it did not stall: a loaded machine oversleeps.)
        #expect(elapsed >= 40 && elapsed < 5_000, "\(elapsed) ms")
        #expect(devices.count == 1, "no reopen while the device is absent")

        // Plugged back in: reopened at the next retry, as a new device.
        present = true
        usleep(60_000)
        #expect(block.withUnsafeBufferPointer { output.write($0.baseAddress!, frames: 240) })
        #expect(output.isPresent && devices.count == 2 && output.generation == 1)
        #expect(changes.last == .back)
        #expect(devices[1].written == 240)
        #expect(output.underruns == 2, "the old device's count is kept")
    }

    @Test func aDeviceMissingAtStartIsOpenedWhenItAppears() {
        var present = false
        var changes: [HotplugChange] = []
        let output = HotplugOutput(name: "alsa:usb", periodFrames: 480, retryMilliseconds: 20, open: { () throws(AudioError) in
            guard present else { throw AudioError.device(name: "usb", operation: "open", reason: "No such file or directory") }
            return UnpluggableDAC()
        }, onChange: { changes.append($0) })
        #expect(!output.isPresent && output.periodFrames == 480)
        #expect(changes.count == 1 && "\(changes[0])".contains("No such file or directory"))
        let block = [Int16](repeating: 0, count: 960)
        _ = block.withUnsafeBufferPointer { output.write($0.baseAddress!, frames: 480) }
        #expect(!output.isPresent)
        present = true
        usleep(30_000)
        _ = block.withUnsafeBufferPointer { output.write($0.baseAddress!, frames: 480) }
        #expect(output.isPresent && output.generation == 1 && changes.last == .back)
    }
}
