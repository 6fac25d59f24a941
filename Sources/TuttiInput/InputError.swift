import Glibc
import TuttiCore

/// Errors from the input edge (evdev devices and GPIO lines): what failed,
/// on which device or line, and the errno behind it. Messages say what to
/// do about the usual causes.
public enum InputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An input device could not be opened.
    case cannotOpen(path: String, errno: Int32)
    /// Reading a device failed (ENODEV: it was unplugged).
    case read(device: String, errno: Int32)
    /// A GPIO chip could not be opened.
    case gpioChip(chip: String, errno: Int32)
    /// The chip has no line of that offset or name.
    case gpioNoSuchLine(chip: String, line: String)
    /// Requesting, reading or waiting on a GPIO line failed.
    case gpioLine(chip: String, line: String, operation: String, errno: Int32)
    /// Any other system call (poll, pipe) failed.
    case system(operation: String, errno: Int32)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let e):
            "cannot open input device \(path): \(Self.text(e))" + Self.hint(e, permission: "add the user to the 'input' group", missing: "list devices with 'ls -l /dev/input/by-id /dev/input/by-path'")
        case .read(let device, let e):
            e == ENODEV ? "input device \(device) went away (unplugged)" : "reading input device \(device): \(Self.text(e))"
        case .gpioChip(let chip, let e):
            "cannot open GPIO chip '\(chip)': \(Self.text(e))" + Self.hint(e, permission: "add the user to the 'gpio' group (or a udev rule for /dev/gpiochip*)", missing: "'gpiodetect' lists chips; the kernel needs CONFIG_GPIO_CDEV")
        case .gpioNoSuchLine(let chip, let line):
            "GPIO chip '\(chip)' has no line '\(line)' ('gpioinfo \(chip)' lists its lines)"
        case .gpioLine(let chip, let line, let op, let e):
            "GPIO \(chip):\(line): \(op) failed: \(Self.text(e))" + (e == EBUSY ? " (the line is used by a driver or another program; 'gpioinfo' shows who)" : "")
        case .system(let op, let e):
            "\(op) failed: \(Self.text(e))"
        }
    }

    static func text(_ e: Int32) -> String { String(cString: strerror(e)) }

    private static func hint(_ e: Int32, permission: String, missing: String) -> String {
        switch e {
        case EACCES, EPERM: " (\(permission))"
        case ENOENT, ENODEV, ENXIO: " (\(missing))"
        default: ""
        }
    }
}
