import Dispatch
import Synchronization
import TuttiCore
import TuttiLibrary
import TuttiStreams
import TuttiSystem
import TuttiControlKit

/// Podcasts at the leader: subscribing (fetch, parse, store), refreshing
/// on a schedule and on demand with the feed's validators, and keeping
/// where the listener is in each episode while it plays.
///
/// Feeds are fetched by `DocumentFetch` (libcurl, the leader's network
/// options: destination policy, CA file, no environment proxy) and parsed
/// by `FeedParser` (expat) before anything is stored: a feed refused for
/// any reason changes nothing.
///
/// Thread contract: every method may be called from any thread; a
/// subscribe or refresh blocks the caller for the fetch. The refresh
/// thread (`tutti-podcasts`) sleeps on a condition until the next show
/// is due, and `stop` wakes it and waits for it to end.
public final class PodcastService: PodcastControl {
    public let library: Library
    private let options: NetworkOptions
    private let log: Logger
    private let events: LeaderEventHub
    /// Seconds between two refreshes of a show.
    public let refreshInterval: Double
    /// The enclosure URL of every known episode (what the checkpoint looks for in the queues).
    private let episodeURLs = Mutex<Set<String>>([])
    /// The last position written per URL, so an unchanged one is not written again.
    private let lastRecorded = Mutex<[String: Int64]>([:])
    private let wake = Condition()
    private let state = Mutex<(running: Bool, threadRunning: Bool)>((false, false))
    private let exited = DispatchSemaphore(value: 0)

    public init(library: Library, options: NetworkOptions, events: LeaderEventHub, refreshInterval: Double = 6 * 3_600, log: Logger) {
        self.library = library
        self.options = options
        self.events = events
        self.refreshInterval = max(1, refreshInterval)
        self.log = log
        reloadEpisodeURLs()
    }

    private func reloadEpisodeURLs() {
        do {
            let urls = try library.episodeURLs()
            episodeURLs.withLock { $0 = urls }
        } catch {
            log.error("podcasts: cannot read the episodes: \(error)")
        }
    }

    func fetchFeed(_ url: String, etag: String?, lastModified: String?) throws(PodcastError) -> (PodcastFeed, FetchedDocument)? {
        let result: DocumentFetchResult
        do {
            result = try DocumentFetch.fetch(url, options: options, maxBytes: FeedLimits.maxFeedBytes, etag: etag, lastModified: lastModified,
                                             accept: "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.1")
        } catch {
            throw .fetch(url: url, error)
        }
        guard case .fetched(let document) = result else { return nil }
        do { return (try FeedParser.parse(document.body), document) } catch { throw .feed(url: url, error) }
    }

    /// Fetches and parses `url`, then stores the show (an existing
    /// subscription to the same URL is refreshed instead).
    public func subscribe(url: String) throws(PodcastError) -> Podcast {
        guard let (feed, document) = try fetchFeed(url, etag: nil, lastModified: nil) else {
            throw .fetch(url: url, .httpStatus(url: url, status: 304))
        }
        do {
            let podcast = try library.subscribe(url: url, feed: feed, etag: document.etag, lastModified: document.lastModified)
            log.info("podcasts: subscribed to '\(podcast.title)' (\(podcast.episodeCount) episodes) at \(url)")
            reloadEpisodeURLs()
            events.emit(.library)
            wake.withLock { wake.signal() } // the schedule has a new show
            return podcast
        } catch {
            throw .library(error)
        }
    }

    public typealias RefreshOutcome = PodcastRefreshOutcome

    /// Refreshes one show (conditional on its validators); a failure is
    /// recorded on the show and returned, and changes nothing else.
    public func refresh(_ podcast: Podcast) -> RefreshOutcome {
        var outcome = RefreshOutcome(podcast: podcast, update: nil, error: nil)
        do throws(PodcastError) {
            if let (feed, document) = try fetchFeed(podcast.url, etag: podcast.etag, lastModified: podcast.lastModified) {
                do {
                    outcome.update = try library.update(podcast.id, feed: feed, etag: document.etag, lastModified: document.lastModified)
                } catch { throw PodcastError.library(error) }
                if let u = outcome.update, u.added > 0 {
                    log.info("podcasts: '\(podcast.title)': \(u.added) new episode\(u.added == 1 ? "" : "s")")
                    reloadEpisodeURLs()
                }
            } else {
                try? library.noteRefresh(podcast.id, error: nil)
            }
        } catch {
            log.warning("podcasts: refresh of '\(podcast.title)' failed: \(error)")
            outcome.error = error.description
            try? library.noteRefresh(podcast.id, error: error.description)
        }
        if let fresh = try? library.podcast(podcast.id) { outcome.podcast = fresh }
        events.emit(.library)
        return outcome
    }

    /// Refreshes every show, one after the other.
    public func refreshAll() -> [RefreshOutcome] {
        ((try? library.podcasts()) ?? []).map(refresh)
    }

    public func unsubscribe(_ id: PodcastID) throws(LibraryError) {
        try library.unsubscribe(id)
        reloadEpisodeURLs()
        events.emit(.library)
    }

    // MARK: The schedule

    /// Starts the refresh thread: each show is refreshed `refreshInterval`
    /// after its last refresh (a failed one is tried again after a tenth of it).
    public func start() {
        state.withLock { $0.running = true }
        do {
            try startThread(name: "tutti-podcasts") { [self] in
                state.withLock { $0.threadRunning = true }
                defer { state.withLock { $0.threadRunning = false }; exited.signal() }
                scheduleLoop()
            }
        } catch {
            log.error("podcasts: no refresh thread (\(error)); feeds refresh only on demand")
        }
    }

    private var running: Bool { state.withLock { $0.running } }

    private func scheduleLoop() {
        while running {
            let now = WallClock.unixMilliseconds()
            let shows = (try? library.podcasts()) ?? []
            var next = now + Int64(refreshInterval * 1000)
            for show in shows where running {
                let retry = Int64(refreshInterval * (show.refreshError == nil ? 1000 : 100))
                let due = (show.refreshedAt ?? show.subscribedAt) + retry
                if due <= now {
                    let done = refresh(show)
                    next = min(next, WallClock.unixMilliseconds() + Int64(refreshInterval * (done.error == nil ? 1000 : 100)))
                } else {
                    next = min(next, due)
                }
            }
            // At least a minute between two passes (the interval, when shorter: tests): a clock set back or a failing show cannot make it spin.
            let wait = max(min(60, refreshInterval), Double(next - WallClock.unixMilliseconds()) / 1000)
            wake.withLock { if running { wake.wait(seconds: wait) } }
        }
    }

    /// Wakes the refresh thread and waits (up to the fetch's timeouts) for it to end.
    public func stop() {
        let threadRunning = state.withLock { s in
            s.running = false
            return s.threadRunning
        }
        wake.withLock { wake.signal() }
        if threadRunning, exited.wait(timeout: .now() + .seconds(Int(options.connectTimeout + options.stallTimeout) + 1)) == .timedOut {
            log.warning("podcasts: the refresh thread is still fetching; leaving it to finish")
        }
    }

    // MARK: Listening

    /// Whether `uri` is an episode's enclosure.
    public func isEpisode(_ uri: String) -> Bool { episodeURLs.withLock { $0.contains(uri) } }

    /// Records where a group is in the episode it plays (from the
    /// checkpoint, every second); marks it played near its end.
    public func record(_ now: NowPlaying) {
        // Playing or paused only: a stopped player is back at 0, which is not where the listener left off.
        guard now.state == .playing || now.state == .paused, !now.path.isEmpty, now.entryID != nil, isEpisode(now.path) else { return }
        let position = Int64((now.positionSeconds * 1000).rounded())
        let changed = lastRecorded.withLock { last in
            guard last[now.path].map({ abs($0 - position) >= 500 }) ?? true else { return false }
            if last.count > 256 { last.removeAll() }
            last[now.path] = position
            return true
        }
        guard changed else { return }
        do {
            let duration = now.durationSeconds.flatMap { $0 > 0 && $0.isFinite ? Int64(($0 * 1000).rounded()) : nil }
            if try library.recordProgress(url: now.path, positionMs: position, durationMs: duration) {
                log.info("podcasts: \(now.path) played (at \(position / 1000) s)")
                events.emit(.library)
            }
        } catch {
            log.warning("podcasts: cannot save the position in \(now.path): \(error)")
        }
    }
}
