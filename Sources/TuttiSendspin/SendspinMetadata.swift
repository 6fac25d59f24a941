import TuttiCore
import TuttiControlKit

/// What a metadata client is told of a group's track: the library's tags
/// where the track is in it, else its file name as the title.
enum SendspinMetadata {
    static func of(_ playing: NowPlaying, leader: any LeaderControl) -> Sendspin.Metadata {
        let path = playing.path
        let track = path.isEmpty ? nil : try? leader.library?.track(atPath: path)
        let title = track?.title ?? (path.isEmpty ? nil : String(path.split(separator: "/").last ?? Substring(path)))
        return Sendspin.Metadata(title: title, artist: track?.artist, album: track?.album, albumArtist: track?.albumArtist,
                                 year: track?.year, track: track?.trackNumber,
                                 positionMilliseconds: Int((playing.positionSeconds * 1_000).rounded()),
                                 durationMilliseconds: Int(((playing.durationSeconds ?? 0) * 1_000).rounded()),
                                 playing: playing.state == .playing, speed: playing.speed,
                                 repeatMode: playing.repeatMode.rawValue, shuffle: playing.shuffle)
    }
}
