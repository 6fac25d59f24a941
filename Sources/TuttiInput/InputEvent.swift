import TuttiCore

/// One `struct input_event` from a Linux input device:
///
/// ```c
/// struct input_event {
///     struct timeval time;   // or __sec/__usec as __kernel_ulong_t on 32-bit time64 ABIs
///     __u16 type;
///     __u16 code;
///     __s32 value;
/// };
/// ```
///
/// 24 bytes where `long` is 8 bytes, 16 where it is 4 (32-bit ARM boards),
/// in the machine's byte order.
public struct InputEvent: Sendable, Hashable, CustomStringConvertible {
    public var seconds: Int64
    public var microseconds: Int64
    public var type: UInt16
    public var code: UInt16
    public var value: Int32

    public init(seconds: Int64, microseconds: Int64, type: UInt16, code: UInt16, value: Int32) {
        self.seconds = seconds
        self.microseconds = microseconds
        self.type = type
        self.code = code
        self.value = value
    }

    /// An event stamped `time` (split into seconds and microseconds).
    public init(time: LocalTime, type: UInt16, code: UInt16, value: Int32) {
        let us = time.nanoseconds / 1_000
        self.init(seconds: us / 1_000_000, microseconds: us % 1_000_000, type: type, code: code, value: value)
    }

    /// The timestamp. Saturates instead of overflowing, so a corrupt record
    /// cannot trap.
    public var time: LocalTime {
        let (s, o1) = seconds.multipliedReportingOverflow(by: nanosecondsPerSecond)
        let (us, o2) = microseconds.multipliedReportingOverflow(by: 1_000)
        let (sum, o3) = s.addingReportingOverflow(us)
        if o1 || o2 || o3 { return LocalTime(nanoseconds: seconds < 0 ? .min : .max) }
        return LocalTime(nanoseconds: sum)
    }

    public var description: String {
        "\(seconds).\(String(microseconds).leftPadded(to: 6)) type \(type) code \(code) value \(value)"
    }
}

extension String {
    fileprivate func leftPadded(to n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}

/// Cuts a byte stream into `InputEvent`s. A read from an evdev device
/// always returns whole records, but a pipe or a file replay need not, so
/// bytes of a record cut short wait here for the rest.
public struct InputEventDecoder: Sendable {
    /// The width of `long` in the kernel's record: 8 or 4.
    public let wordSize: Int
    public var recordSize: Int { 2 * wordSize + 8 }
    private var pending: [UInt8] = []

    public init(wordSize: Int = MemoryLayout<Int>.size) {
        precondition(wordSize == 8 || wordSize == 4, "input_event words are 4 or 8 bytes")
        self.wordSize = wordSize
    }

    /// Bytes of an unfinished record (at end of input: a truncated record).
    public var pendingByteCount: Int { pending.count }

    /// Appends `bytes` and returns every record they complete.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer) -> [InputEvent] {
        var events: [InputEvent] = []
        var input = bytes[...]
        if !pending.isEmpty {
            let need = recordSize - pending.count
            let take = min(need, input.count)
            pending.append(contentsOf: input.prefix(take))
            input = input.dropFirst(take)
            guard pending.count == recordSize else { return events }
            pending.withUnsafeBytes { events.append(record(at: 0, in: $0)) }
            pending.removeAll(keepingCapacity: true)
        }
        var offset = input.startIndex
        while input.endIndex - offset >= recordSize {
            events.append(record(at: offset, in: bytes))
            offset += recordSize
        }
        pending.append(contentsOf: bytes[offset..<input.endIndex])
        return events
    }

    public mutating func decode(_ bytes: [UInt8]) -> [InputEvent] {
        bytes.withUnsafeBytes { decode($0) }
    }

    private func record(at offset: Int, in buffer: UnsafeRawBufferPointer) -> InputEvent {
        let s: Int64, us: Int64
        if wordSize == 8 {
            s = buffer.loadUnaligned(fromByteOffset: offset, as: Int64.self)
            us = buffer.loadUnaligned(fromByteOffset: offset + 8, as: Int64.self)
        } else {
            s = Int64(buffer.loadUnaligned(fromByteOffset: offset, as: Int32.self))
            us = Int64(buffer.loadUnaligned(fromByteOffset: offset + 4, as: Int32.self))
        }
        let tail = offset + 2 * wordSize
        return InputEvent(
            seconds: s, microseconds: us,
            type: buffer.loadUnaligned(fromByteOffset: tail, as: UInt16.self),
            code: buffer.loadUnaligned(fromByteOffset: tail + 2, as: UInt16.self),
            value: buffer.loadUnaligned(fromByteOffset: tail + 4, as: Int32.self))
    }

    /// The bytes the kernel would write for `event` (for tests, replays and
    /// uinput).
    public static func encode(_ event: InputEvent, wordSize: Int = MemoryLayout<Int>.size) -> [UInt8] {
        var out: [UInt8] = []
        func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v) { out.append(contentsOf: $0) } }
        if wordSize == 8 {
            put(event.seconds)
            put(event.microseconds)
        } else {
            put(Int32(truncatingIfNeeded: event.seconds))
            put(Int32(truncatingIfNeeded: event.microseconds))
        }
        put(event.type)
        put(event.code)
        put(event.value)
        return out
    }
}
