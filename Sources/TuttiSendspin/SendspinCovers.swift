import Synchronization
import TuttiCore
import TuttiDecode
import TuttiSystem
import TuttiControlKit

/// The library's covers as artwork clients ask for them: scaled to a
/// channel's size and format with FFmpeg (`CoverImage`), kept per (cover,
/// size, format), so every display of a group costs one scale per track.
///
/// Threads: the server's notifier thread (`tutti-sendspin`) only, which
/// scales; the cache is under a Mutex all the same.
final class SendspinCovers: Sendable {
    private let leader: any LeaderControl
    private let log: Logger
    /// Scaled pictures kept, oldest first (a few per track: 8 tracks of 4 channels).
    static let kept = 32

    private struct Key: Hashable {
        var hash: String
        var width: Int
        var height: Int
        var format: String
    }
    private let cache = Mutex<[(key: Key, image: [UInt8])]>([])

    init(leader: any LeaderControl, log: Logger) {
        self.leader = leader
        self.log = log
    }

    /// The cover `hash` as `channel` wants it; nil where there is none or it cannot be made (logged).
    func image(hash: String, channel: SendspinArtworkChannel) -> [UInt8]? {
        guard let format = PictureFormat(rawValue: channel.format) else { return nil }
        let key = Key(hash: hash, width: channel.width, height: channel.height, format: channel.format)
        if let hit = cache.withLock({ $0.first { $0.key == key }?.image }) { return hit }
        let cover: [UInt8]
        do {
            guard let found = try leader.library?.cover(hash: hash) else { return nil }
            cover = found.bytes
        } catch {
            log.warning("Sendspin artwork: reading cover \(hash.prefix(12)): \(error)")
            return nil
        }
        let started = Condition.now()
        let image: [UInt8]
        do { image = try CoverImage.scaled(cover, width: channel.width, height: channel.height, format: format) } catch {
            log.warning("Sendspin artwork: cover \(hash.prefix(12)) as \(channel.width)×\(channel.height) \(channel.format): \(error)")
            return nil
        }
        log.debug("Sendspin artwork: cover \(hash.prefix(12)) scaled to \(channel.width)×\(channel.height) \(channel.format), " +
                  "\(image.count) bytes in \((Condition.now() - started) / 1_000) µs")
        cache.withLock { c in
            c.append((key, image))
            if c.count > Self.kept { c.removeFirst(c.count - Self.kept) }
        }
        return image
    }

    /// How many scaled pictures are kept (for tests).
    var count: Int { cache.withLock { $0.count } }
}
