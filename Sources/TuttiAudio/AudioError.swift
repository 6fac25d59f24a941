/// Errors from the audio edge: what failed, on which file or device, and why.
public enum AudioError: Error, CustomStringConvertible, Equatable {
    case cannotOpen(path: String, reason: String)
    case undecodable(path: String, reason: String)
    case device(name: String, operation: String, reason: String)
    case codec(operation: String, reason: String)
    case resampler(reason: String)
    case badOutput(spec: String, reason: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open \(path): \(reason)"
        case .undecodable(let path, let reason): "cannot decode \(path): \(reason)"
        case .device(let name, let op, let reason): "audio device \(name): \(op) failed: \(reason)"
        case .codec(let op, let reason): "codec \(op) failed: \(reason)"
        case .resampler(let reason): "resampler: \(reason)"
        case .badOutput(let spec, let reason): "output '\(spec)': \(reason)"
        }
    }
}
