import TuttiCore

/// Errors from the audio edge: what failed, on which file or device, and why.
public enum AudioError: Error, CustomStringConvertible, Equatable {
    case cannotOpen(path: String, reason: String)
    case undecodable(path: String, reason: String)
    case device(name: String, operation: String, reason: String)
    case codec(operation: String, reason: String)
    case resampler(reason: String)
    case badOutput(spec: String, reason: String)

    public var description: String { message.description }

    /// What the person is told (the catalogue's `audio.*`); the reasons
    /// FFmpeg, ALSA and the codecs give are data.
    public var message: UserMessage {
        switch self {
        case .cannotOpen(let path, let reason): UserMessage(.audioCannotOpen, ["path": path, "reason": reason])
        case .undecodable(let path, let reason): UserMessage(.audioUndecodable, ["path": path, "reason": reason])
        case .device(let name, let op, let reason): UserMessage(.audioDevice, ["name": name, "operation": op, "reason": reason])
        case .codec(let op, let reason): UserMessage(.audioCodec, ["operation": op, "reason": reason])
        case .resampler(let reason): UserMessage(.audioResampler, ["reason": reason])
        case .badOutput(let spec, let reason): UserMessage(.audioBadOutput, ["spec": spec, "reason": reason])
        }
    }
}
