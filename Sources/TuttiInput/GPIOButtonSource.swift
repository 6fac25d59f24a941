import Synchronization
import TuttiCore
import TuttiGestures

/// An edge on a requested GPIO line, in logical terms: `isActive` is true
/// when the line went to its active level (a press, for a button).
public struct GPIOEdge: Sendable, Hashable {
    /// Index into the requested lines.
    public var line: Int
    public var isActive: Bool
    public var time: LocalTime

    public init(line: Int, isActive: Bool, time: LocalTime) {
        self.line = line
        self.isActive = isActive
        self.time = time
    }
}

/// One GPIO line to request: where it is and how it is wired.
public struct GPIOLineRequest: Sendable, Hashable {
    public var chip: String
    public var line: ButtonMapping.LineReference
    public var electrical: ButtonMapping.Electrical

    public init(chip: String, line: ButtonMapping.LineReference, electrical: ButtonMapping.Electrical) {
        self.chip = chip
        self.line = line
        self.electrical = electrical
    }
}

/// The edge-event interface `GPIOButtonSource` reads through. `LibgpiodLines`
/// is the real one (thin libgpiod v1 calls); `ScriptedGPIOLines` replays a
/// script on virtual time, for tests and machines without a GPIO chip.
///
/// Called from the source's thread only, except `wake()`.
public protocol GPIOEdgeProvider: AnyObject, Sendable {
    /// The logical level of each requested line now (true: active).
    func levels() throws(InputError) -> [Bool]
    /// Blocks until edges arrive, `deadline` passes (nil: no deadline) or
    /// `wake()` is called; returns the edges read, possibly none. Returns
    /// nil when no edge will ever come again (a script ran out).
    func waitForEdges(until deadline: LocalTime?) throws(InputError) -> [GPIOEdge]?
    /// The provider's clock, the one its edge timestamps are on.
    func now() -> LocalTime
    /// Makes a blocked `waitForEdges` return soon. Any thread.
    func wake()
}

/// Buttons and rotary encoders on GPIO lines, read through libgpiod, turned
/// into commands by a mapping. Reads on its own thread (`tutti-gpio`).
public final class GPIOButtonSource: ButtonSource {
    /// What a requested line is for.
    enum Role: Sendable, Equatable {
        case button(String)
        case encoderA(String)
        case encoderB(String)
    }

    public let name: String
    public let mapping: ButtonMapping
    private let provider: any GPIOEdgeProvider
    private let roles: [Role]
    private let log: Logger
    private let thread = SourceThread()

    /// The lines the mapping's GPIO buttons and encoders use, in the order
    /// they are requested, with what each is for.
    static func requests(for mapping: ButtonMapping) -> [(GPIOLineRequest, Role)] {
        var out: [(GPIOLineRequest, Role)] = []
        for b in mapping.buttons {
            guard case .gpio(let chip, let line, let electrical) = b.input else { continue }
            out.append((GPIOLineRequest(chip: chip, line: line, electrical: electrical), .button(b.name)))
        }
        for e in mapping.encoders {
            guard case .gpio(let chip, let a, let b, let electrical) = e.input else { continue }
            out.append((GPIOLineRequest(chip: chip, line: a, electrical: electrical), .encoderA(e.name)))
            out.append((GPIOLineRequest(chip: chip, line: b, electrical: electrical), .encoderB(e.name)))
        }
        return out
    }

    /// Every GPIO line of `mapping`, as edge-event lines (both edges), with
    /// the configured bias and polarity.
    ///
    /// - Throws: `InputError.gpioChip` (chip missing or no permission),
    ///   `.gpioNoSuchLine`, `.gpioLine` (line busy, request refused).
    public convenience init(mapping: ButtonMapping, consumer: String = "tuttid", logger: Logger = .silent) throws(InputError) {
        let requests = Self.requests(for: mapping)
        let lines = try LibgpiodLines(requests: requests.map(\.0), consumer: consumer, logger: logger)
        let chips = Set(requests.map(\.0.chip)).sorted().joined(separator: ",")
        self.init(mapping: mapping, provider: lines, name: "gpio \(chips)", logger: logger)
    }

    /// Reads through `provider`, whose lines are in the order of
    /// `requests(for: mapping)` (a `ScriptedGPIOLines` in tests).
    public init(mapping: ButtonMapping, provider: any GPIOEdgeProvider, name: String = "gpio", logger: Logger = .silent) {
        self.mapping = mapping
        self.provider = provider
        self.name = name
        log = logger
        roles = Self.requests(for: mapping).map(\.1)
    }

    /// The requests this source's mapping makes (what a provider must serve).
    public var lineRequests: [GPIOLineRequest] { Self.requests(for: mapping).map(\.0) }

    deinit { stop() }

    public func start(handler: @escaping @Sendable (ButtonSourceEvent) -> Void) {
        thread.start(name: "tutti-gpio") { [self] in
            let error = run(handler)
            handler(.finished(error))
        }
    }

    public func stop() {
        thread.stop(wake: provider.wake)
    }

    public func wait() { thread.join() }

    private func run(_ handler: (ButtonSourceEvent) -> Void) -> InputError? {
        var router = GestureRouter(mapping: mapping)
        func emit(_ commands: [ButtonCommandEvent]) {
            for c in commands { handler(.command(c)) }
        }
        // Encoders decode from both lines' levels; keep them here. A
        // button held at start is taken as released: its release is then
        // an edge to the level it is at, which the recogniser ignores.
        var levels: [Bool]
        do {
            levels = try provider.levels()
        } catch {
            return error
        }
        precondition(levels.count == roles.count, "the GPIO provider serves \(levels.count) lines for \(roles.count) requests")
        var encoderLines: [String: (a: Int, b: Int)] = [:]
        for (i, role) in roles.enumerated() {
            switch role {
            case .encoderA(let n): encoderLines[n, default: (-1, -1)].a = i
            case .encoderB(let n): encoderLines[n, default: (-1, -1)].b = i
            case .button: break
            }
        }
        for (n, l) in encoderLines { router.startEncoder(n, a: levels[l.a], b: levels[l.b]) }

        while !thread.isStopping {
            let edges: [GPIOEdge]?
            do {
                edges = try provider.waitForEdges(until: router.nextDeadline)
            } catch {
                return error
            }
            guard let edges else {
                emit(router.finish(at: provider.now()))
                return nil
            }
            if thread.isStopping { break }
            // Several lines' events arrive per wake-up; feed them in time order.
            for edge in edges.sorted(by: { ($0.time, $0.line) < ($1.time, $1.line) }) where roles.indices.contains(edge.line) {
                levels[edge.line] = edge.isActive
                switch roles[edge.line] {
                case .button(let n):
                    emit(router.button(n, isPressed: edge.isActive, at: edge.time))
                case .encoderA(let n), .encoderB(let n):
                    let l = encoderLines[n]!
                    emit(router.encoderLevels(n, a: levels[l.a], b: levels[l.b], at: edge.time))
                }
            }
            emit(router.tick(now: provider.now()))
        }
        return nil
    }
}

/// A GPIO edge provider that replays a script on virtual time: the clock
/// jumps to each edge, or to the deadline the source waits for, so a test
/// runs instantly and every time is exact. Ends (nil) once the script is
/// done and `end` is reached.
public final class ScriptedGPIOLines: GPIOEdgeProvider {
    private struct State {
        var now: LocalTime
        var script: [GPIOEdge]
        var next = 0
    }
    private let state: Mutex<State>
    private let initial: [Bool]
    private let end: LocalTime

    /// - Parameters:
    ///   - levels: logical levels at the start, one per requested line.
    ///   - edges: in time order.
    ///   - start: the clock before the first edge.
    ///   - end: when the input ends, at or after the last edge.
    public init(levels: [Bool], edges: [GPIOEdge], start: LocalTime = LocalTime(nanoseconds: 0), end: LocalTime) {
        initial = levels
        self.end = end
        state = Mutex(State(now: start, script: edges))
    }

    public func levels() throws(InputError) -> [Bool] { initial }

    public func waitForEdges(until deadline: LocalTime?) throws(InputError) -> [GPIOEdge]? {
        state.withLock { s in
            if s.next < s.script.count {
                let edge = s.script[s.next]
                if let deadline, deadline < edge.time {
                    s.now = max(s.now, deadline)
                    return []
                }
                s.next += 1
                s.now = max(s.now, edge.time)
                return [edge]
            }
            if let deadline, deadline <= end {
                s.now = max(s.now, deadline)
                return []
            }
            s.now = max(s.now, end)
            return nil
        }
    }

    public func now() -> LocalTime { state.withLock { $0.now } }

    public func wake() {}
}
