import FoundationEssentials
import TuttiAudio
import TuttiCore
import TuttiSystem
import TuttiDecode

/// A source that holds audio of its own before it decodes it (a network
/// buffer, a capture device): what it holds counts as buffered.
protocol ReportsBuffering: AnyObject {
    var bufferedSeconds: Double { get }
    /// Finite network file: share downloaded, 0…1.
    var downloadedFraction: Double? { get }
}

/// Opens and decodes one source on its own thread into a bounded buffer of
/// decoded frames, so that the thread consuming it (the leader's source
/// thread) never waits on the network: `poll` returns at once with frames,
/// "nothing yet", the end, or the failure.
///
/// Thread contract: `poll`, `close` and the properties may be called from
/// any thread (one consumer polls); the decoder lives on the private thread.
/// `close` must be called when the consumer is done: it stops the thread
/// and abandons a connection still being made or read.
// Sendable because the ring, progress and flags are touched only under `lock`; the decoder lives on the private thread.
public final class BackgroundSource: @unchecked Sendable {
    public enum Poll: Equatable {
        /// Frames appended to the output (interleaved stereo at `sampleRate`).
        case frames(Int)
        /// No audio buffered yet: connecting, or the network is slow.
        case waiting
        case end
        /// The source failed to open or to continue; a reason a user can act on.
        case failed(String)
    }

    /// What the consumer shows: sample rate and length once opened, how much is buffered.
    public struct Progress: Sendable, Equatable {
        public var sampleRate: Int?
        public var frameCount: Int?
        /// Decoded frames waiting plus the byte buffer's worth, in seconds.
        public var bufferedSeconds: Double = 0
        /// Finite network file: share downloaded, 0…1.
        public var downloadedFraction: Double?
        /// Frames delivered so far (0: still loading).
        public var deliveredFrames = 0
    }

    public let uri: String
    /// It delivers in real time (a pipe, a line input), never ahead: the
    /// player starts it a buffer ahead (`StreamPlayer.fillPending`).
    public let isRealTime: Bool
    /// A real-time source that may deliver ahead of real time (a pipe whose
    /// writer pre-rolls, as shairport-sync writes a second of silence at
    /// once): its first audio is held this long, so the player sees how far
    /// ahead it is (`Progress.bufferedSeconds`) and leads it only by the rest
    /// of a buffer. 0: led by a whole buffer (a line input).
    public let settleSeconds: Double
    private var firstArrival: Int64?
    private let lock = Condition()
    private var ring: [Float] = []          // interleaved stereo, consumed from `head`
    private var head = 0
    private var capacityFrames: Int
    private var progressValue = Progress()
    private var finished = false
    private var failure: String?
    private var closed = false
    private let cancellation = NetworkCancellation()
    private let ringSeconds: Double

    /// Starts opening at once. `open` runs on the new thread and may block;
    /// a `NetworkSource` made with `cancellation` stops waiting on `close`.
    /// `startFrame` (at `frameRate` Hz) is where decoding starts.
    public init(uri: String, startFrame: Int = 0, frameRate: Int = 48_000, ringSeconds: Double = 4, isRealTime: Bool = false, settleSeconds: Double = 0,
                open: @escaping @Sendable (NetworkCancellation) throws -> any AudioDecoder) {
        self.uri = uri
        self.isRealTime = isRealTime
        self.settleSeconds = settleSeconds
        self.ringSeconds = ringSeconds
        capacityFrames = Int(ringSeconds * 48_000)
        // The decoder runs on it: a roomier stack than startThread's default.
        do {
            try startThread(name: "tutti-netsrc", stackSize: 1 << 20) { [self] in run(open: open, startFrame: startFrame, frameRate: frameRate) }
        } catch {
            fail(error) // the system refused a thread: this stream fails, the process goes on
        }
    }

    public var progress: Progress { lock.withLock { var p = progressValue; p.bufferedSeconds += bufferedFrames / Double(max(1, p.sampleRate ?? 1)); return p } }
    private var bufferedFrames: Double { Double((ring.count - head) / 2) }

    /// Moves up to `maxFrames` buffered frames to `output`, without waiting.
    public func poll(into output: inout [Float], maxFrames: Int) -> Poll {
        lock.lock()
        defer { lock.unlock() }
        let available = (ring.count - head) / 2
        if available > 0, settleSeconds > 0, progressValue.deliveredFrames == 0, let first = firstArrival, Condition.now() - first < Int64(settleSeconds * 1e9) {
            return .waiting // settling: how far ahead it runs shows in a moment
        }
        if available > 0 {
            let n = min(available, maxFrames)
            output.append(contentsOf: ring[head..<(head + 2 * n)])
            head += 2 * n
            if head == ring.count { ring.removeAll(keepingCapacity: true); head = 0 }
            progressValue.deliveredFrames += n
            lock.signal() // room for the decoder again
            return .frames(n)
        }
        if let failure { return .failed(failure) }
        return finished ? .end : .waiting
    }

    /// Stops the thread and any connection; later polls return `.end`.
    public func close() {
        lock.withLock {
            closed = true
            finished = true
            ring.removeAll()
            head = 0
            lock.broadcast()
        }
        cancellation.cancel()
    }

    private func run(open: (NetworkCancellation) throws -> any AudioDecoder, startFrame: Int, frameRate: Int) {
        let decoder: any AudioDecoder
        do {
            decoder = try open(cancellation)
            let rate = decoder.sampleRate
            if startFrame > 0 { try decoder.seek(toFrame: Int((Double(startFrame) * Double(rate) / Double(frameRate)).rounded())) }
            lock.withLock {
                progressValue.sampleRate = rate
                progressValue.frameCount = decoder.frameCount
                capacityFrames = Int(ringSeconds * Double(rate))
            }
        } catch {
            fail(error)
            return
        }
        let network = decoder as? any ReportsBuffering
        var block: [Float] = []
        while true {
            // Wait for room (the consumer drains) or the end.
            let go: Bool = lock.withLock {
                while !closed && (ring.count - head) / 2 >= capacityFrames { lock.wait() }
                return !closed
            }
            guard go else { return }
            block.removeAll(keepingCapacity: true)
            let n: Int
            do { n = try decoder.read(into: &block, maxFrames: 4_096) } catch {
                fail(error)
                return
            }
            let buffered = network?.bufferedSeconds ?? 0
            let fraction = network?.downloadedFraction
            lock.withLock {
                guard !closed else { return }
                if n == 0 { finished = true }
                if head > 0 && head * 2 > ring.count { ring.removeSubrange(0..<head); head = 0 }
                ring.append(contentsOf: block)
                if firstArrival == nil && !block.isEmpty { firstArrival = Condition.now() }
                progressValue.bufferedSeconds = buffered
                progressValue.downloadedFraction = fraction
            }
            if n == 0 { return }
        }
    }

    private func fail(_ error: any Error) {
        lock.withLock {
            guard !closed else { return }
            // The message names the URL and the cause ("…: the server answered HTTP 404 (not found)").
            failure = Self.reason(error)
        }
    }

    static func reason(_ error: any Error) -> String {
        if let e = error as? AudioError, case .cannotOpen(_, let reason) = e { return reason }
        if let e = error as? AudioError, case .undecodable(_, let reason) = e { return reason }
        return "\(error)"
    }
}
