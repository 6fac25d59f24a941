import Glibc
import TuttiAudio
import TuttiCore
import TuttiDecode

/// Reads raw PCM from a pipe or FIFO as it is written (a live source: no
/// length, no seeking). It runs on a `BackgroundSource`'s thread, so the
/// player never waits on it. A FIFO with no writer, or a writer that sends
/// nothing, is silence, not an error: the read waits for the next writer.
final class PipeSource: AudioDecoder {
    let spec: PipeSourceSpec
    private let fd: Int32
    private let cancellation: NetworkCancellation
    private var pending: [UInt8] = []

    var path: String { spec.path }
    var sampleRate: Int { spec.sampleRate }
    var frameCount: Int? { nil }

    init(_ spec: PipeSourceSpec, cancellation: NetworkCancellation) throws(AudioError) {
        self.spec = spec
        self.cancellation = cancellation
        var info = stat()
        guard stat(spec.path, &info) == 0 else { throw .cannotOpen(path: spec.path, reason: "\(spec.path): \(String(cString: strerror(errno))) (create it with mkfifo)") }
        let isFIFO = info.st_mode & S_IFMT == S_IFIFO
        // Read and write on a FIFO: opening never waits for a writer, and a
        // writer that leaves is not an end of file (the next one carries on).
        fd = open(spec.path, (isFIFO ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotOpen(path: spec.path, reason: "\(spec.path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    func seek(toFrame frame: Int) throws(AudioError) {} // live: it resumes where the writer is

    func read(into output: inout [Float], maxFrames: Int) throws(AudioError) -> Int {
        var chunk = [UInt8](repeating: 0, count: max(1, maxFrames) * spec.bytesPerFrame)
        while !cancellation.isCancelled {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, 100) // wakes to see a close
            if ready < 0 && errno != EINTR { throw .undecodable(path: spec.path, reason: "\(spec.path): \(String(cString: strerror(errno)))") }
            guard ready > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count - pending.count) }
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                throw .undecodable(path: spec.path, reason: "\(spec.path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { return 0 } // a plain file ran out (a FIFO never says so: we hold it open for writing too)
            pending += chunk[0..<n]
            let before = output.count
            let used = pending.withUnsafeBytes { spec.convert($0, into: &output) }
            pending.removeFirst(used)
            if output.count > before { return (output.count - before) / 2 }
        }
        return 0
    }
}
