import CGPIOD
import Glibc
import TuttiCore

/// GPIO lines requested through libgpiod's v1 API for edge events on both
/// edges: the only code that calls libgpiod. Owns its chips and lines and
/// releases them in `deinit`.
///
/// Polarity is applied here, not by the kernel: lines are requested
/// without GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW and an active-low line's
/// levels and edges are inverted in software. The v1 uAPI reports a
/// both-edges event by reading the line's level after the interrupt, and
/// whether that read honoured the active-low flag has depended on the
/// kernel; inverting the physical level ourselves means the same edge is a
/// press on every kernel. (The recogniser's debounce absorbs the odd event
/// whose level was read after a bounce.)
///
/// Used from the source thread only, except `wake()`.
// Sendable because the chips, lines and descriptors are used by the source thread only; other threads call just wake(), which writes to the wake pipe.
final class LibgpiodLines: GPIOEdgeProvider, @unchecked Sendable {
    private var chips: [String: OpaquePointer] = [:]
    private var lines: [OpaquePointer] = []
    private var eventFDs: [Int32] = []
    private let requests: [GPIOLineRequest]
    private let wakePipe: WakePipe
    private let log: Logger

    /// Opens the chips and requests every line, or throws and holds nothing.
    init(requests: [GPIOLineRequest], consumer: String, logger: Logger) throws(InputError) {
        self.requests = requests
        log = logger
        wakePipe = try WakePipe()
        do {
            for r in requests { try request(r, consumer: consumer) }
        } catch {
            releaseAll()
            throw error
        }
    }

    deinit { releaseAll() }

    private func releaseAll() {
        for line in lines { gpiod_line_release(line) }
        lines = []
        eventFDs = []
        for chip in chips.values { gpiod_chip_close(chip) }
        chips = [:]
    }

    /// `chip0` in the config means the kernel's `gpiochip0`; anything else
    /// (`gpiochip0`, `/dev/gpiochip0`, a number, a label such as
    /// `pinctrl-bcm2711`) goes to gpiod_chip_open_lookup as written.
    static func lookupName(_ chip: String) -> String {
        if chip.hasPrefix("chip"), chip.count > 4, chip.dropFirst(4).allSatisfy({ $0.isASCII && $0.isNumber }) {
            return "gpio" + chip
        }
        return chip
    }

    /// Opens (once) the chip named in the config.
    static func openChip(_ chip: String) throws(InputError) -> OpaquePointer {
        errno = 0
        guard let handle = gpiod_chip_open_lookup(lookupName(chip)) else {
            // open_lookup tries name, path, label and number in turn; a
            // chip that is simply absent can leave errno at 0.
            throw .gpioChip(chip: chip, errno: errno == 0 ? ENOENT : errno)
        }
        return handle
    }

    private func request(_ r: GPIOLineRequest, consumer: String) throws(InputError) {
        let chip: OpaquePointer
        if let open = chips[r.chip] {
            chip = open
        } else {
            chip = try Self.openChip(r.chip)
            chips[r.chip] = chip
        }
        let found: OpaquePointer?
        switch r.line {
        case .offset(let o):
            found = o < gpiod_chip_num_lines(chip) ? gpiod_chip_get_line(chip, o) : nil
        case .name(let n):
            found = gpiod_chip_find_line(chip, n)
        }
        guard let line = found else { throw .gpioNoSuchLine(chip: r.chip, line: r.line.description) }

        let bias: Int32 =
            switch r.electrical.bias {
            case .asIs: 0
            case .disabled: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
            case .pullUp: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
            case .pullDown: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
            }
        var rc = Self.requestBothEdges(line, consumer: consumer, flags: bias)
        if rc != 0, bias != 0, errno == EINVAL || errno == EOPNOTSUPP {
            // Kernels before 5.5 cannot set bias from user space. Carry on
            // without it: the board's firmware may already pull the line
            // (config.txt `gpio=17=ip,pu`), which the warning points to.
            log.warning("GPIO \(r.chip):\(r.line): this kernel cannot set \(r.electrical.bias.rawValue); set the pull in the device tree or config.txt")
            rc = Self.requestBothEdges(line, consumer: consumer, flags: 0)
        }
        guard rc == 0 else {
            throw .gpioLine(chip: r.chip, line: r.line.description, operation: "request for edge events", errno: errno)
        }
        lines.append(line)
        let fd = gpiod_line_event_get_fd(line)
        guard fd >= 0 else {
            throw .gpioLine(chip: r.chip, line: r.line.description, operation: "event descriptor", errno: errno)
        }
        eventFDs.append(fd)
    }

    private static func requestBothEdges(_ line: OpaquePointer, consumer: String, flags: Int32) -> Int32 {
        consumer.withCString { name in
            var config = gpiod_line_request_config(
                consumer: name, request_type: Int32(GPIOD_LINE_REQUEST_EVENT_BOTH_EDGES), flags: flags)
            return gpiod_line_request(line, &config, 0)
        }
    }

    func levels() throws(InputError) -> [Bool] {
        var out: [Bool] = []
        for (i, line) in lines.enumerated() {
            let v = gpiod_line_get_value(line)
            guard v >= 0 else {
                throw .gpioLine(chip: requests[i].chip, line: requests[i].line.description, operation: "read value", errno: errno)
            }
            out.append((v == 1) != requests[i].electrical.activeLow)
        }
        return out
    }

    func waitForEdges(until deadline: LocalTime?) throws(InputError) -> [GPIOEdge]? {
        var fds = eventFDs.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        fds.append(pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0))
        let timeout = Sys.pollTimeout(until: deadline, now: Sys.now())
        let ready = try Sys.retrying("poll on GPIO lines") { poll(&fds, nfds_t(fds.count), timeout) }
        guard ready > 0 else { return [] }
        if fds.last!.revents != 0 { wakePipe.drain() }

        var edges: [GPIOEdge] = []
        var buffer = [gpiod_line_event](repeating: gpiod_line_event(), count: 16)
        for i in lines.indices where fds[i].revents != 0 {
            // Readable, so this read does not block; what it leaves
            // wakes the next poll.
            let n = gpiod_line_event_read_multiple(lines[i], &buffer, UInt32(buffer.count))
            guard n >= 0 else {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .gpioLine(chip: requests[i].chip, line: requests[i].line.description, operation: "read event", errno: errno)
            }
            let readAt = Sys.now()
            for event in buffer.prefix(Int(n)) {
                let rising = event.event_type == Int32(GPIOD_LINE_EVENT_RISING_EDGE)
                let stamped = LocalTime(nanoseconds: Int64(event.ts.tv_sec) &* nanosecondsPerSecond &+ Int64(event.ts.tv_nsec))
                edges.append(GPIOEdge(line: i, isActive: rising != requests[i].electrical.activeLow, time: Sys.plausible(stamped, readAt: readAt)))
            }
        }
        return edges
    }

    func now() -> LocalTime { Sys.now() }

    func wake() { wakePipe.wake() }
}

/// Opens a GPIO chip as a mapping file names it and closes it again:
/// `tutti doctor`'s check that the buttons' chip is there and ours to use.
public func checkGPIOChip(_ chip: String) throws(InputError) {
    let handle = try LibgpiodLines.openChip(chip)
    gpiod_chip_close(handle)
}
