import TuttiCore
import TuttiGestures

/// What a button source reports to its handler.
public enum ButtonSourceEvent: Sendable, Equatable, CustomStringConvertible {
    /// A button or encoder asked for a command.
    case command(ButtonCommandEvent)
    /// The source stopped and reports nothing more: after `stop()` or the
    /// end of its input (nil), or because reading failed (the error, e.g. a
    /// USB remote unplugged). Delivered exactly once, last.
    case finished(InputError?)

    public var description: String {
        switch self {
        case .command(let c): "command \(c)"
        case .finished(nil): "finished"
        case .finished(let e?): "finished: \(e)"
        }
    }
}

/// Anything that turns buttons into commands: a Linux input device
/// (`InputEventReader`) or GPIO lines (`GPIOButtonSource`). Each reads on a
/// thread of its own (`tutti-evdev`, `tutti-gpio`; Linux allows 15
/// characters) and owns its gesture state.
public protocol ButtonSource: AnyObject, Sendable {
    /// For logs: the device path or the chips read.
    var name: String { get }

    /// Starts the reading thread. `handler` is called on that thread, in
    /// time order, and must not block for long (hand the command to the
    /// control plane and return). Call once.
    func start(handler: @escaping @Sendable (ButtonSourceEvent) -> Void)

    /// Stops the thread and waits for it; if the source was started,
    /// `.finished` has been delivered when this returns. Idempotent. From
    /// the handler it only asks: the thread stops once the handler returns.
    func stop()

    /// Waits until the source ends by itself (end of input or error).
    func wait()
}

/// The sources a mapping file asks for.
public enum ButtonSources {
    /// One `InputEventReader` per `input` line (grabbing where asked) and,
    /// if any button or encoder is on a GPIO line, one `GPIOButtonSource`.
    /// None is started.
    ///
    /// - Throws: the first `InputError` (a device that is missing or not
    ///   readable, a GPIO chip or line that cannot be had); sources opened
    ///   before it are closed again.
    public static func open(_ mapping: ButtonMapping, consumer: String = "tuttid", logger: Logger) throws(InputError) -> [any ButtonSource] {
        var sources: [any ButtonSource] = []
        for input in mapping.inputs {
            sources.append(try InputEventReader(path: input.path, mapping: mapping, grab: input.grab, logger: logger.with(label: "input")))
        }
        if !GPIOButtonSource.requests(for: mapping).isEmpty {
            sources.append(try GPIOButtonSource(mapping: mapping, consumer: consumer, logger: logger.with(label: "gpio")))
        }
        return sources
    }
}
