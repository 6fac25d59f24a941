import Glibc
import TuttiCore

/// What a Tutti leader announces over DNS-SD (see docs/discovery.md).
public enum TuttiService {
    /// The DNS-SD service type of a leader's follower port.
    public static let type = "_tutti._tcp"
    /// DNS-SD instance names are one DNS label: at most 63 bytes.
    public static let maxNameBytes = 63

    /// TXT keys.
    public enum Key {
        /// Wire protocol version (`WireProtocol.version`).
        public static let version = "v"
        /// JSON-RPC control port, when the control socket is on.
        public static let control = "control"
        /// MPD protocol port, when the MPD server is on.
        public static let mpd = "mpd"
        /// A leader id that survives restarts (machine and port).
        public static let id = "id"
        /// The fingerprint of the leader's static key (v7): a paired
        /// speaker connects only to announcements that carry its leader's.
        public static let key = "key"
    }

    /// This machine's host name, as `gethostname` says.
    public static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "localhost" : name
    }

    /// "Tutti on HOST", cut to fit one DNS label.
    public static var defaultName: String { fitName("Tutti on \(hostName)") }

    /// Cuts `name` to at most 63 UTF-8 bytes without splitting a character.
    public static func fitName(_ name: String) -> String {
        var out = ""
        for character in name {
            if out.utf8.count + String(character).utf8.count > maxNameBytes { break }
            out.append(character)
        }
        return out
    }

    /// An id for the leader on this machine and port that stays the same
    /// across restarts and renames (FNV-1a of /etc/machine-id, or the host
    /// name without one, and the port), so clients can tell a leader that
    /// moved address from a new one.
    public static func stableLeaderID(port: UInt16) -> String {
        var seed = hostName
        if let fd = fopen("/etc/machine-id", "r") {
            var line = [CChar](repeating: 0, count: 128)
            if fgets(&line, Int32(line.count), fd) != nil {
                let text = String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !text.isEmpty { seed = text }
            }
            fclose(fd)
        }
        return FNV1a.hex("\(seed):\(port)".utf8)
    }

    /// The TXT record of a leader.
    public static func txt(controlPort: UInt16?, mpdPort: UInt16?, id: String, keyFingerprint: String? = nil) -> [String: String] {
        var txt = [Key.version: String(WireProtocol.version), Key.id: id]
        if let keyFingerprint { txt[Key.key] = keyFingerprint }
        if let controlPort { txt[Key.control] = String(controlPort) }
        if let mpdPort { txt[Key.mpd] = String(mpdPort) }
        return txt
    }
}
