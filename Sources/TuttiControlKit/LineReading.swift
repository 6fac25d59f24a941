import TuttiAudio
import TuttiCore
import TuttiNet

extension LineDiscipline {
    /// The longest request line a JSON-RPC surface reads (the leader's API, Snapcast's).
    public static let maxLineBytes = 64 * 1024

    /// Reads `\n`-terminated lines until the peer closes, `until` holds,
    /// or `handle` gives a reason to close (returned). A line longer than
    /// `maxLineBytes` is reported as nil as soon as it is too long, and the
    /// rest of it discarded unread into memory; a half
    /// line left hanging for `LineDiscipline.partialLineMilliseconds` ends
    /// the connection (an idle client with nothing half-sent may wait forever),
    /// as does a client that may do nothing (`loggedIn` false) and has not
    /// logged in within `LineDiscipline.loginMilliseconds`: whatever else it
    /// sends, it only holds a place.
    @discardableResult
    public static func readLines(from connection: TCPConnection, until stop: () -> Bool, loggedIn: () -> Bool = { true },
                          _ handle: ([UInt8]?) -> String?) -> String? {
        let buffer = ReceiveBuffer()
        var line: [UInt8] = []
        var partial = LineDiscipline.PartialLineClock()
        let hanging = "half a line left hanging for \(LineDiscipline.partialLineMilliseconds / 1000) s"
        let connectedAt = Monotonic.now()
        var lines = 0
        var discarding = false
        let noLogin = "not logged in within \(LineDiscipline.loginMilliseconds / 1000) s of connecting"
        let loginDeadline = connectedAt + Int64(LineDiscipline.loginMilliseconds) * nanosecondsPerMillisecond
        // Asleep until bytes come or a deadline falls due; a stopping server closes the connection, which wakes it.
        var armed: Int64? = -1
        while true {
            LineDiscipline.arm(connection, until: LineDiscipline.nextDeadline(connectedAt: connectedAt, requests: lines, loggedIn: loggedIn(), partial: partial),
                               now: Monotonic.now(), armed: &armed)
            let n: Int
            do { (n, _) = try buffer.receive(from: connection) } catch NetError.timedOut {
                if stop() { return nil }
                if partial.expired(now: Monotonic.now()) { return hanging }
                if Monotonic.now() > loginDeadline, !loggedIn() { return noLogin }
                // Every real client asks something at once; a silent connection only holds a place.
                if lines == 0, Monotonic.now() - connectedAt > Int64(LineDiscipline.firstRequestMilliseconds) * nanosecondsPerMillisecond {
                    return "no request within \(LineDiscipline.firstRequestMilliseconds / 1000) s of connecting"
                }
                continue
            } catch { return nil }
            guard n > 0 else { return nil }
            var ended = false
            for byte in buffer.storage[0..<n] {
                if byte == UInt8(ascii: "\n") {
                    ended = true
                    lines += 1
                    if !discarding, let reason = handle(line) { return reason }
                    discarding = false
                    line.removeAll(keepingCapacity: true)
                } else if !discarding {
                    line.append(byte)
                    if line.count > maxLineBytes {
                        discarding = true
                        line.removeAll()
                        if let reason = handle(nil) { return reason }
                    }
                }
            }
            let now = Monotonic.now()
            partial.update(unfinished: !line.isEmpty || discarding, lineEnded: ended, now: now)
            if partial.expired(now: now) { return hanging }
            if now > loginDeadline, !loggedIn() { return noLogin }
            if stop() { return nil }
        }
    }
}
