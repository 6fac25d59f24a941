import Glibc
import TuttiCore

/// The pieces of `bench/library`: a deterministic corpus of tagged MP3s
/// made from one encoded file, synthetic rows for a large library, a query
/// set, and timing helpers. Driven by the gated test in
/// `Tests/TuttiLibraryTests/BenchmarkTests.swift` (see `bench/library/run.sh`).
public enum LibraryBenchmark {
    /// Tags of one generated track.
    public struct Entry: Sendable {
        public var relativePath: String
        public var title: String
        public var artist: String
        public var album: String
        public var genre: String
        public var trackNumber: Int
        public var year: Int
    }

    private static let words = [
        "love", "night", "dream", "fire", "river", "summer", "shadow", "light", "heart", "road", "city", "storm",
        "golden", "silver", "blue", "midnight", "ocean", "wild", "electric", "forever", "morning", "paper", "glass",
        "winter", "stone", "echo", "velvet", "neon", "highway", "garden", "thunder", "honey", "ghost", "crystal",
        "desert", "rain", "sugar", "magic", "rebel", "angel", "broken", "secret", "satellite", "harbor", "lantern",
        "mirror", "orbit", "canyon", "violet", "hollow", "café", "señorita", "über", "naïve", "東京", "사랑", "夜景",
    ]
    private static let genres = ["Rock", "Pop", "Jazz", "Electronic", "Folk", "Classical", "Hip-Hop", "Ambient", "Soul", "Metal"]


    /// `count` entries: 20 tracks per album, 5 albums per artist.
    public static func entries(count: Int, seed: UInt64 = 1) -> [Entry] {
        var r = SplitMix64(seed: seed) // every run makes the same corpus
        var out: [Entry] = []
        out.reserveCapacity(count)
        var artist = "", album = "", genre = "", year = 0
        for i in 0..<count {
            if i % 100 == 0 { artist = "The " + r.pick(words).capitalizedFirst + " " + r.pick(words).capitalizedFirst + " \(i / 100)" }
            if i % 20 == 0 {
                album = r.pick(words).capitalizedFirst + " " + r.pick(words).capitalizedFirst
                genre = r.pick(genres)
                year = 1960 + r.below(64)
            }
            let titleWords = (0..<(2 + r.below(3))).map { _ in r.pick(words) }
            let title = titleWords.joined(separator: " ").capitalizedFirst
            out.append(Entry(relativePath: "\(artist)/\(album)/\(String(i % 20 + 1).leftPadded(2)) \(title) \(i).mp3",
                             title: title, artist: artist, album: album, genre: genre, trackNumber: i % 20 + 1, year: year))
        }
        return out
    }

    /// Writes `entries` under `directory`: each file is `template` (an
    /// untagged MP3) behind an ID3v2.3 tag with TIT2/TPE1/TALB/TRCK/TCON/TYER.
    public static func writeCorpus(_ entries: [Entry], template: [UInt8], directory: String) throws(LibraryError) {
        var made = Set<String>()
        for e in entries {
            let path = directory + "/" + e.relativePath
            let folder = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
            if made.insert(folder).inserted { try makeDirectories(folder) }
            let tag = ID3v2Writer.tag(version: 3, frames: [
                .text("TIT2", e.title), .text("TPE1", e.artist), .text("TALB", e.album),
                .text("TRCK", "\(e.trackNumber)"), .text("TCON", e.genre), .text("TYER", "\(e.year)"),
            ])
            try Library.writeFileAtomically(path, tag + template, durable: false)
        }
    }

    static func makeDirectories(_ path: String) throws(LibraryError) {
        var current = ""
        for part in path.split(separator: "/") {
            current += "/" + part
            if mkdir(current, 0o755) != 0 && errno != EEXIST { throw .io(path: current, reason: String(cString: strerror(errno))) }
        }
    }

    /// Inserts `entries` as tracks without files (the 100,000-track search
    /// benchmark), in one transaction through the same triggers as a scan.
    public static func insertSynthetic(_ entries: [Entry], into library: Library, root: String = "/synthetic") throws(LibraryError) {
        try library.locked { db throws(LibraryError) in
            try db.transaction { () throws(LibraryError) in
                for (i, e) in entries.enumerated() {
                    try db.run("""
                        INSERT INTO tracks(path, format, title, artist, album, genre, track_no, year, duration_frames, sample_rate,
                                           file_size, mtime_ns, content_hash, added_at)
                        VALUES (?, 'mp3', ?, ?, ?, ?, ?, ?, 9600000, 48000, 5000000, 0, ?, 0)
                        """, [.text(root + "/" + e.relativePath), .text(e.title), .text(e.artist), .text(e.album), .text(e.genre),
                              .int(Int64(e.trackNumber)), .int(Int64(e.year)), .text("synthetic-\(i)")])
                }
            }
        }
    }

    /// What people type: prefixes while typing, whole words, two words,
    /// field filters, accented and CJK words. Deterministic.
    public static func queries(count: Int = 200, seed: UInt64 = 7) -> [String] {
        var r = SplitMix64(seed: seed) // every run makes the same corpus
        var out: [String] = []
        while out.count < count {
            let w = r.pick(words)
            switch out.count % 5 {
            case 0: out.append(String(w.prefix(3)))
            case 1: out.append(w)
            case 2: out.append(w + " " + String(r.pick(words).prefix(4)))
            case 3: out.append("artist:" + w)
            default: out.append(r.pick(["cafe", "senorita", "uber", "naive", "東京", "사랑", "夜景", "midn", "ele"]))
            }
        }
        return out
    }

    /// Latencies of `search` in seconds, one per query, after one warm-up pass.
    public static func searchLatencies(_ library: Library, queries: [String], limit: Int = 50) throws(LibraryError) -> [Double] {
        for q in queries { _ = try library.search(q, limit: limit) }
        var out: [Double] = []
        for q in queries {
            let start = now()
            _ = try library.search(q, limit: limit)
            out.append(now() - start)
        }
        return out
    }

    /// Monotonic seconds.
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }

    /// The value below which `p` (0…1) of `values` fall (nearest rank).
    public static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}

extension String {
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

extension SplitMix64 {
    mutating func pick<T>(_ a: [T]) -> T { a[below(a.count)] }
}
