import Foundation
import Testing
import TuttiCore
import TuttiDecode
@testable import TuttiLibrary
import TuttiTestSupport

/// The scan reads every format FFmpeg decodes: tags (Korean and accented,
/// from the container or the Ogg stream, under each format's own names),
/// the cover, and the exact length the decoder then plays; search finds each.
@Suite struct FFmpegScanTests {
    @Test func scansTagsCoversAndExactLengthsOfEveryFormat() throws {
        let dir = makeTemporaryDirectory()
        let corpus = try FFmpegCorpus(dir: dir + "/music")
        // DSD: ffmpeg cannot encode it; a DSF file written here, untagged.
        write(dir + "/music/DSD/04 - One Bit.dsf", FFmpegCorpus.dsf(seconds: 0.25, frequency: 1_000, amplitude: 0.5).bytes)
        let library = try Library(path: dir + "/library.db")
        let summary = try library.scan(folder: dir + "/music")
        #expect(summary.skipped.isEmpty, "\(summary.skipped)")
        #expect(summary.added == FFmpegCorpus.entries.count + 1)
        let dsd = try #require(try library.track(atPath: corpus.dir + "/DSD/04 - One Bit.dsf"))
        #expect(dsd.format == .dsd)
        #expect(dsd.title == "One Bit")
        #expect(dsd.trackNumber == 4)
        #expect(dsd.sampleRate == 352_800)
        #expect(dsd.durationFrames == 2_822_400 / 4 / 8)

        for entry in FFmpegCorpus.entries {
            let track = try #require(try library.track(atPath: corpus.dir + "/" + entry.file), "\(entry.file) not scanned")
            #expect(track.format.rawValue == entry.kind)
            #expect(track.title == FFmpegCorpus.title(of: entry), "\(entry.file)")
            #expect(track.artist == FFmpegCorpus.artist, "\(entry.file)")
            #expect(track.album == FFmpegCorpus.album, "\(entry.file)")
            #expect(track.albumArtist == "Various", "\(entry.file)")
            #expect(track.trackNumber == 3, "\(entry.file)")
            #expect(track.discNumber == 1, "\(entry.file)")
            #expect(track.year == 2020, "\(entry.file)")
            #expect(track.genre == "Ambient", "\(entry.file)")
            #expect(track.sampleRate == entry.rate, "\(entry.file)")
            // The length the scan keeps is what the decoder plays, to the frame.
            let decoder = try AudioFile.open(track.path)
            var out: [Float] = []
            while try decoder.read(into: &out, maxFrames: 8_192) > 0 {}
            #expect(track.durationFrames == out.count / 2, "\(entry.file): scanned \(track.durationFrames), decoded \(out.count / 2)")
            if entry.hasCover {
                let hash = try #require(track.coverHash, "\(entry.file) has no cover")
                #expect(try library.cover(hash: hash)?.bytes == corpus.cover, "\(entry.file)")
            }
            // Search finds it by its title's last word, its artist and its album.
            let word = String(FFmpegCorpus.title(of: entry).split(separator: " ").last!)
            #expect(try library.search(word).tracks.map(\.path).contains(track.path), "\(entry.file) by '\(word)'")
            #expect(try library.search("김민준").tracks.contains { $0.path == track.path })
            #expect(try library.search("ete 앨범").tracks.contains { $0.path == track.path })
        }
    }

    @Test func aFileThatIsNotAudioIsSkippedWithAReason() throws {
        let dir = makeTemporaryDirectory()
        write(dir + "/music/fake.m4a", Array("this is not an MP4 file at all".utf8) + [UInt8](repeating: 7, count: 4_000))
        write(dir + "/music/fake.opus", Array("OggS".utf8) + [UInt8](repeating: 0, count: 100))
        let library = try Library(path: dir + "/library.db")
        let summary = try library.scan(folder: dir + "/music")
        #expect(summary.added == 0)
        #expect(summary.skipped.count == 2, "\(summary.skipped)")
    }
}
