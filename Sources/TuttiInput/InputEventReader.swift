import Glibc
import Synchronization
import TuttiCore
import TuttiGestures

/// Turns input events into router calls: the evdev rules, without I/O.
struct EvdevTranslator: Sendable {
    var router: GestureRouter
    /// After SYN_DROPPED the kernel's buffer overflowed: everything up to
    /// and including the next SYN_REPORT is stale and must be ignored.
    private(set) var droppingUntilReport = false
    private(set) var droppedReports = 0

    init(mapping: ButtonMapping) { router = GestureRouter(mapping: mapping) }

    mutating func handle(_ e: InputEvent, at time: LocalTime) -> [ButtonCommandEvent] {
        if e.type == LinuxInputCode.evSyn {
            if e.code == LinuxInputCode.synDropped {
                // Which keys are down is now unknown; forget gestures in
                // progress rather than act on half of them.
                droppingUntilReport = true
                droppedReports += 1
                router.reset()
                return []
            }
            if e.code == LinuxInputCode.synReport && droppingUntilReport {
                droppingUntilReport = false
                return []
            }
        }
        guard !droppingUntilReport else { return [] }
        switch e.type {
        case LinuxInputCode.evKey where e.value == 0 || e.value == 1:
            // Value 2 is the kernel's autorepeat: the recogniser makes its own repeats.
            guard e.code <= LinuxInputCode.keyMax, let name = router.mapping.buttonName(forKeyCode: e.code) else { break }
            return router.button(name, isPressed: e.value == 1, at: time)
        case LinuxInputCode.evRel:
            guard let name = router.mapping.encoderName(forRelativeCode: e.code) else { break }
            return router.encoderSteps(name, steps: Int(e.value), at: time)
        default:
            break
        }
        // Every record carries a time: let it move the gesture clock on.
        return router.tick(now: time)
    }
}

/// Reads `struct input_event` records from a file descriptor — an evdev
/// device (`/dev/input/event*`: USB media keys, IR receivers through
/// rc-core, gpio-keys buttons) or anything else that carries the same
/// records, such as a pipe — and turns them into commands by a mapping.
///
/// Reads on its own thread (`tutti-evdev`); `start`, `stop` and
/// `wait` may be called from any thread. Kernel autorepeat is ignored; the
/// gesture layer makes its own repeats. A record cut short at the end of
/// the input is logged and dropped.
public final class InputEventReader: ButtonSource {
    /// Where gesture time comes from.
    public enum Clock: Sendable, Equatable {
        /// Real time on CLOCK_MONOTONIC. Event timestamps are used when the
        /// device accepted EVIOCSCLOCKID (so they are monotonic), else the
        /// time each record was read; pending gestures are ticked on time.
        case live
        /// Only the records' own timestamps; nothing happens between
        /// records, and at end of input pending gestures resolve at the
        /// last record's time. For replays and tests: the output depends
        /// only on the bytes.
        case replay
    }

    public let name: String
    public let mapping: ButtonMapping
    public let clock: Clock
    private let fd: Int32
    private let closesDescriptor: Bool
    private let log: Logger
    private let wakePipe: WakePipe
    private let thread = SourceThread()
    /// Whether EVIOCSCLOCKID put the device's timestamps on CLOCK_MONOTONIC.
    public let timestampsAreMonotonic: Bool
    /// Whether the device is grabbed (EVIOCGRAB).
    public let isGrabbed: Bool

    /// `_IOW('E', 0x90, int)`: take the device for this descriptor alone.
    static let eviocgrab: UInt = 0x4004_4590
    /// `_IOW('E', 0xa0, int)`: choose the clock of event timestamps.
    static let eviocsclockid: UInt = 0x4004_45a0

    /// Reads `fd` (not closed unless `closesDescriptor`). The descriptor is
    /// made non-blocking: the thread polls it together with a wake-up pipe.
    ///
    /// - Parameters:
    ///   - grab: ask for the device alone (EVIOCGRAB), so its keys do not
    ///     also reach a console or a desktop. Ignored (with a log line) for
    ///     descriptors that are not input devices.
    /// - Throws: `InputError.system` if the wake-up pipe cannot be made.
    public init(
        fd: Int32, name: String? = nil, mapping: ButtonMapping, clock: Clock = .live, grab: Bool = false,
        closesDescriptor: Bool = false, logger: Logger = .silent
    ) throws(InputError) {
        self.fd = fd
        self.name = name ?? "fd \(fd)"
        self.mapping = mapping
        self.clock = clock
        self.closesDescriptor = closesDescriptor
        log = logger
        wakePipe = try WakePipe()
        Sys.setNonBlocking(fd)
        // Swift imports Glibc's variadic ioctl through the overlay's
        // (fd, request, CInt) form, which passes the int by value as
        // EVIOCGRAB and EVIOCSCLOCKID expect; no C shim is needed.
        if clock == .live {
            timestampsAreMonotonic = ioctl(fd, Self.eviocsclockid, CInt(CLOCK_MONOTONIC)) == 0
        } else {
            timestampsAreMonotonic = false
        }
        if grab {
            let grabbed = ioctl(fd, Self.eviocgrab, CInt(1)) == 0
            if !grabbed { logger.warning("\(self.name): cannot grab (\(InputError.text(errno))); its keys also reach other readers") }
            isGrabbed = grabbed
        } else {
            isGrabbed = false
        }
    }

    /// Opens an input device, read-only.
    /// - Throws: `InputError.cannotOpen` (missing device, no permission).
    public convenience init(path: String, mapping: ButtonMapping, grab: Bool = false, logger: Logger = .silent) throws(InputError) {
        let fd = try Sys.retrying("open", { .cannotOpen(path: path, errno: $0) }) { open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) }
        do {
            try self.init(fd: fd, name: path, mapping: mapping, clock: .live, grab: grab, closesDescriptor: true, logger: logger)
        } catch {
            close(fd)
            throw error
        }
    }

    deinit {
        stop()
        if closesDescriptor {
            // Closing also releases a grab.
            close(fd)
        }
    }

    public func start(handler: @escaping @Sendable (ButtonSourceEvent) -> Void) {
        thread.start(name: "tutti-evdev") { [self] in
            let error = run(handler)
            handler(.finished(error))
        }
    }

    public func stop() {
        thread.stop(wake: wakePipe.wake)
    }

    public func wait() { thread.join() }

    /// The reading loop; returns the error that ended it, nil for end of
    /// input or stop.
    private func run(_ handler: (ButtonSourceEvent) -> Void) -> InputError? {
        var translator = EvdevTranslator(mapping: mapping)
        var decoder = InputEventDecoder()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: decoder.recordSize * 64, alignment: 8)
        defer { buffer.deallocate() }
        var lastEventTime: LocalTime?
        func emit(_ commands: [ButtonCommandEvent]) {
            for c in commands { handler(.command(c)) }
        }
        func endOfInput() {
            if decoder.pendingByteCount > 0 {
                log.warning("\(name): \(decoder.pendingByteCount) bytes at the end are not a whole input_event; ignored")
            }
            let end = clock == .replay ? (lastEventTime ?? LocalTime(nanoseconds: 0)) : Sys.now()
            emit(translator.router.finish(at: end))
        }

        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0)]
        while !thread.isStopping {
            let timeout = clock == .live ? Sys.pollTimeout(until: translator.router.nextDeadline, now: Sys.now()) : -1
            let ready: Int32
            do {
                ready = try Sys.retrying("poll") { poll(&fds, 2, timeout) }
            } catch {
                return error
            }
            if thread.isStopping { break }
            if ready == 0 {
                emit(translator.router.tick(now: Sys.now()))
                continue
            }
            guard fds[0].revents != 0 else { continue }
            // Read everything there is; EAGAIN ends the round.
            while true {
                let n = read(fd, buffer.baseAddress, buffer.count)
                if n > 0 {
                    let readAt = Sys.now()
                    for event in decoder.decode(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) {
                        let time: LocalTime
                        switch clock {
                        case .replay: time = event.time
                        case .live: time = timestampsAreMonotonic ? Sys.plausible(event.time, readAt: readAt) : readAt
                        }
                        lastEventTime = time
                        emit(translator.handle(event, at: time))
                    }
                    continue
                }
                if n == 0 {
                    endOfInput()
                    return nil
                }
                let e = errno
                if e == EINTR { continue }
                if e == EAGAIN || e == EWOULDBLOCK { break }
                endOfInput()
                return .read(device: name, errno: e)
            }
        }
        return nil
    }
}
